-- Consecutive failed password checks, per key: "account:<id>" for an account, or for a
-- username that names no account "name:<sha256>", so that known and unknown names are
-- throttled alike and the throttle cannot tell which names exist.
CREATE TABLE login_failures (
  key           text PRIMARY KEY,
  failures      integer NOT NULL CHECK (failures > 0),
  blocked_until timestamptz,
  updated_at    timestamptz NOT NULL
);

CREATE INDEX login_failures_updated ON login_failures (updated_at);

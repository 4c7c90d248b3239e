-- Each account's own security activity, written in the same transaction as its cause and shown
-- to its owner (GET /acc/me/events). Never a secret: what happened, when, from which client
-- address, and in which session. Deleted with the account, and swept after EVENT_RETENTION_DAYS.
CREATE TABLE security_events (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  type           text NOT NULL CHECK (type IN (
    'activated', 'signed-in', 'sign-in-failed', 'password-changed', 'reset-requested',
    'password-reset', 'session-revoked', 'signed-out-everywhere')),
  occurred_at    timestamptz NOT NULL,
  client_address text NOT NULL CHECK (length(client_address) <= 64),
  session_id     uuid
);

CREATE INDEX security_events_account ON security_events (account_id, occurred_at DESC, id DESC);
CREATE INDEX security_events_time ON security_events (occurred_at);

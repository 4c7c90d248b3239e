-- The sign-in throttle, rebuilt so that it cannot be raced, turned against the owner, or read
-- as an oracle. Both levels are keyed by what was typed (a name or an address, lower-cased),
-- never by the account it names, so that known and unknown names, and a name and the address
-- of one account, are throttled exactly alike. Keys are HMACs: no name, address or client
-- address is stored as it came.
DROP TABLE login_failures;

-- Level 1: consecutive failures of one identifier from one client address, with the doubling
-- delay they earned. The owner at another address has a row of their own.
CREATE TABLE login_delays (
  identifier_key bytea NOT NULL CHECK (octet_length(identifier_key) = 32),
  client_key     bytea NOT NULL CHECK (octet_length(client_key) = 32),
  failures       integer NOT NULL CHECK (failures > 0),
  blocked_until  timestamptz,
  updated_at     timestamptz NOT NULL,
  PRIMARY KEY (identifier_key, client_key)
);

CREATE INDEX login_delays_updated ON login_delays (updated_at);

-- Level 2: failures an identifier may still take from all client addresses together, a token
-- bucket that refills LOGIN_FAILURES_PER_HOUR an hour.
CREATE TABLE login_budgets (
  identifier_key bytea PRIMARY KEY CHECK (octet_length(identifier_key) = 32),
  tokens         double precision NOT NULL,
  updated_at     timestamptz NOT NULL
);

CREATE INDEX login_budgets_updated ON login_budgets (updated_at);

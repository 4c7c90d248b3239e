-- One-time codes sent by e-mail, for every purpose in one table: a registration code activates a
-- pending registration, a reset code sets a new password. Only a hash of the code is stored; the
-- purpose is part of every lookup, so a code of one purpose is unknown to the other's endpoint.
CREATE TABLE one_time_codes (
  code_hash  bytea PRIMARY KEY CHECK (octet_length(code_hash) = 32),
  purpose    text NOT NULL CHECK (purpose IN ('registration', 'reset')),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE INDEX one_time_codes_account ON one_time_codes (account_id, purpose);
CREATE INDEX one_time_codes_expiry ON one_time_codes (expires_at);

-- Pending registrations keep their codes here from now on; the registration itself keeps
-- only its expiry, which a repeated request no longer moves.
INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at)
SELECT code_hash, 'registration', id, code_expires_at, code_sent_at FROM accounts WHERE code_hash IS NOT NULL;

ALTER TABLE accounts DROP CONSTRAINT pending_rows_have_a_code;
ALTER TABLE accounts DROP CONSTRAINT active_rows_have_no_code;
ALTER TABLE accounts DROP COLUMN code_hash;
ALTER TABLE accounts DROP COLUMN code_sent_at;
ALTER TABLE accounts RENAME COLUMN code_expires_at TO expires_at;
ALTER TABLE accounts ADD CONSTRAINT pending_rows_expire CHECK ((activated_at IS NULL) = (expires_at IS NOT NULL));

-- Code requests per address and purpose, whatever the address's state, so that the cooldown
-- and the daily cap answer alike for an address with an account and one without. The address
-- is stored only as a keyed hash (HMAC of the lower-cased address).
CREATE TABLE address_quotas (
  purpose      text NOT NULL CHECK (purpose IN ('registration', 'reset')),
  address_key  bytea NOT NULL CHECK (octet_length(address_key) = 32),
  -- The accepted requests of the last day, oldest first.
  requested_at timestamptz[] NOT NULL,
  last_at      timestamptz NOT NULL,
  PRIMARY KEY (purpose, address_key)
);

CREATE INDEX address_quotas_last ON address_quotas (last_at);

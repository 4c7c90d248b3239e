-- A second factor (TOTP, RFC 6238) per account. A row with activated_at NULL is an enrollment
-- waiting for its first code; a new enrollment replaces it. The secret is sealed (AES-256-GCM
-- under the sealing key, src/sealing.ts), never stored in plain text. last_used_step is the
-- highest time step accepted: a code is accepted only for a later step, so each code works once.
CREATE TABLE second_factors (
  account_id     bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  sealed_secret  bytea NOT NULL,
  created_at     timestamptz NOT NULL,
  activated_at   timestamptz,
  last_used_step bigint
);

-- Single-use recovery codes of an active factor, only as SHA-256 hashes. Using one deletes it.
CREATE TABLE recovery_codes (
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  code_hash  bytea NOT NULL CHECK (octet_length(code_hash) = 32),
  PRIMARY KEY (account_id, code_hash)
);

-- The event types of the second factor join those of sql/006 and sql/008. (Rewritten from a DO
-- block that read the list back from pg_get_constraintdef; the constraint it makes is the same,
-- and storage/migrations.ts accepts the earlier text's checksum.)
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY ('{activated,password-changed,password-reset,refresh-retried,refresh-token-reused,reset-requested,session-evicted,session-revoked,sign-in-failed,signed-in,signed-out-everywhere,totp-enabled,totp-disabled,recovery-code-used}'::text[]));

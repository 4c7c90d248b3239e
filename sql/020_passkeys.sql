-- Passkeys (WebAuthn, issue 32). A passkey survives a password reset, and is added only with the
-- password, the second factor when one is on, and a code mailed to the account ('passkey' codes).
--
-- The user handle the authenticator stores with each passkey of the account: 16 random bytes,
-- never the name or the address, so that an authenticator's list of accounts tells nothing more.
ALTER TABLE accounts ADD COLUMN user_handle bytea NOT NULL DEFAULT uuid_send(gen_random_uuid()) UNIQUE;

-- One row per passkey. credential_id is unique across all accounts: the sign-in looks it up
-- before it knows whose it is. sign_count only grows (a compare-and-set, src/passkeys/passkeys.ts);
-- backup_eligible is the BE flag at registration, which never changes; backed_up is BS as last seen.
CREATE TABLE passkeys (
  id              uuid PRIMARY KEY,
  account_id      bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  credential_id   bytea NOT NULL UNIQUE CHECK (octet_length(credential_id) BETWEEN 1 AND 1023),
  public_key      bytea NOT NULL CHECK (octet_length(public_key) <= 1024),
  algorithm       integer NOT NULL CHECK (algorithm IN (-7, -8, -257)),
  sign_count      bigint NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
  transports      text[] NOT NULL CHECK (cardinality(transports) <= 8),
  backup_eligible boolean NOT NULL,
  backed_up       boolean NOT NULL,
  aaguid          uuid NOT NULL,
  name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
  created_at      timestamptz NOT NULL,
  last_used_at    timestamptz
);
CREATE INDEX passkeys_account ON passkeys (account_id);

-- A registration challenge: at most one per account (a new request replaces it), bound to the
-- session that asked, used once (deleted by the request that presents it), and swept at expiry.
CREATE TABLE passkey_challenges (
  id         uuid PRIMARY KEY,
  account_id bigint NOT NULL UNIQUE REFERENCES accounts (id) ON DELETE CASCADE,
  session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  challenge  bytea NOT NULL CHECK (octet_length(challenge) = 32),
  expires_at timestamptz NOT NULL
);
CREATE INDEX passkey_challenges_expiry ON passkey_challenges (expires_at);
CREATE INDEX passkey_challenges_session ON passkey_challenges (session_id);

-- Sign-in challenges are stored nowhere while they are unused (the challenge_id carries them,
-- sealed), so that a stranger's flood of options requests writes nothing. A presented one is
-- recorded here until it expires, which is what makes it single use.
CREATE TABLE spent_passkey_challenges (
  challenge  bytea PRIMARY KEY CHECK (octet_length(challenge) = 32),
  expires_at timestamptz NOT NULL
);
CREATE INDEX spent_passkey_challenges_expiry ON spent_passkey_challenges (expires_at);

-- The new code purpose and quota, the passkey events and their webhook events, written out.
ALTER TABLE one_time_codes DROP CONSTRAINT one_time_codes_purpose_check;
ALTER TABLE one_time_codes ADD CONSTRAINT one_time_codes_purpose_check CHECK (purpose = ANY ('{email-change,passkey,registration,reset}'::text[]));
ALTER TABLE address_quotas DROP CONSTRAINT address_quotas_purpose_check;
ALTER TABLE address_quotas ADD CONSTRAINT address_quotas_purpose_check CHECK (purpose = ANY ('{account-email-change,email-change,passkey,registration,reset}'::text[]));
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY ('{activated,email-change-requested,email-changed,passkey-added,passkey-counter-regressed,passkey-removed,password-changed,password-reset,recovery-code-used,refresh-retried,refresh-token-reused,reset-requested,session-evicted,session-revoked,sign-in-failed,signed-in,signed-out-everywhere,totp-disabled,totp-enabled}'::text[]));
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_type_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_type_check CHECK (type = ANY ('{account.activated,account.deleted,account.email_changed,passkey.added,passkey.removed,password.changed,password.reset,second_factor.disabled,second_factor.enabled,sessions.revoked}'::text[]));

COMMENT ON TABLE passkeys IS 'WebAuthn credentials (issue 32); removed with their account';
COMMENT ON TABLE passkey_challenges IS 'Registration challenges: one per account, bound to its session, used once, 5 minutes';
COMMENT ON TABLE spent_passkey_challenges IS 'Sign-in challenges already presented, kept until they expire (single use)';

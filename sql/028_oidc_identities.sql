-- Sign-in with an OpenID provider (features/oidc/). An identity is (issuer, subject), linked to
-- one account at most. An attempt is one trip to a provider: it keeps what the callback checks
-- (the state's hash, the nonce, the PKCE verifier sealed, the browser's binding as a hash) and is
-- used once. A code is what the callback hands the application for POST /auth/token (or, for a
-- link, for POST /acc/me/identities), kept as a hash, used once, for a minute.
CREATE TABLE identities (
  id            uuid PRIMARY KEY,
  account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  provider      text NOT NULL CHECK (provider ~ '^[a-z0-9-]{1,32}$'),
  issuer        text NOT NULL CHECK (length(issuer) <= 2048),
  subject       text NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
  created_at    timestamptz NOT NULL,
  last_used_at  timestamptz,
  UNIQUE (issuer, subject)
);
CREATE INDEX identities_account ON identities (account_id);

CREATE TABLE oidc_attempts (
  state_hash      bytea PRIMARY KEY CHECK (octet_length(state_hash) = 32),
  provider        text NOT NULL,
  nonce           text NOT NULL CHECK (length(nonce) <= 64),
  verifier        bytea NOT NULL CHECK (octet_length(verifier) <= 256),
  browser_hash    bytea CHECK (octet_length(browser_hash) = 32),
  redirect_uri    text NOT NULL CHECK (length(redirect_uri) <= 2048),
  client_state    text NOT NULL CHECK (length(client_state) <= 512),
  code_challenge  text NOT NULL CHECK (code_challenge ~ '^[A-Za-z0-9_-]{43}$'),
  -- Set for a link: the account and the session that asked for it, which only that session completes.
  account_id      bigint REFERENCES accounts (id) ON DELETE CASCADE,
  session_id      uuid,
  expires_at      timestamptz NOT NULL,
  CHECK ((account_id IS NULL) = (session_id IS NULL)),
  CHECK ((account_id IS NULL) = (browser_hash IS NOT NULL))
);
CREATE INDEX oidc_attempts_expiry ON oidc_attempts (expires_at);
CREATE INDEX oidc_attempts_account ON oidc_attempts (account_id);

CREATE TABLE oidc_codes (
  code_hash       bytea PRIMARY KEY CHECK (octet_length(code_hash) = 32),
  provider        text NOT NULL,
  issuer          text NOT NULL,
  subject         text NOT NULL,
  -- For an identity no account has: its address, which only a trusted provider's verified one makes an account of.
  email           text CHECK (length(email) <= 254),
  email_verified  boolean NOT NULL,
  redirect_uri    text NOT NULL,
  code_challenge  text NOT NULL,
  account_id      bigint REFERENCES accounts (id) ON DELETE CASCADE,
  session_id      uuid,
  expires_at      timestamptz NOT NULL
);
CREATE INDEX oidc_codes_expiry ON oidc_codes (expires_at);
CREATE INDEX oidc_codes_account ON oidc_codes (account_id);

ALTER TABLE one_time_codes DROP CONSTRAINT one_time_codes_purpose_check;
ALTER TABLE one_time_codes ADD CONSTRAINT one_time_codes_purpose_check
  CHECK (purpose = ANY ('{deletion,email-change,email-change-current,identity,passkey,registration,reset,totp}'::text[]));
ALTER TABLE address_quotas DROP CONSTRAINT address_quotas_purpose_check;
ALTER TABLE address_quotas ADD CONSTRAINT address_quotas_purpose_check
  CHECK (purpose = ANY ('{account-email-change,deletion,email-change,identity,identity-notice,passkey,registration,reset,reset-known,totp}'::text[]));
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY ('{account-disabled,account-enabled,activated,email-change-requested,email-changed,identity-linked,identity-removed,passkey-added,passkey-counter-regressed,passkey-removed,passkey-renamed,password-changed,password-reset,recovery-code-used,refresh-retried,refresh-token-reused,reset-forced,reset-requested,session-evicted,session-revoked,sessions-ended,sign-in-failed,signed-in,signed-out-everywhere,throttle-cleared,totp-disabled,totp-enabled}'::text[]));
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_type_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_type_check CHECK (type = ANY ('{account.activated,account.deleted,account.disabled,account.email_changed,account.enabled,account.unlocked,identity.linked,identity.removed,passkey.added,passkey.removed,passkey.renamed,password.changed,password.reset,password.reset_forced,second_factor.disabled,second_factor.enabled,sessions.revoked}'::text[]));

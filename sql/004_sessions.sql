-- Accounts get a public id: tokens and GET /acc/me name it instead of the sequential row id,
-- which would tell how many accounts exist and in what order they came.
ALTER TABLE accounts ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX accounts_public_id_key ON accounts (public_id);

-- Sessions replace the credential version: revoking a session refuses its refresh token and
-- every access token that names it, and a password change or reset deletes them all.
-- Tokens issued before this migration carry no session and are refused from now on.
ALTER TABLE accounts DROP COLUMN credential_version;

-- A session is started by a password sign-in. Revoking it deletes the row.
CREATE TABLE sessions (
  id             uuid PRIMARY KEY,
  account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at     timestamptz NOT NULL,
  -- The session's last sign-in or refresh, with the client it came from.
  last_used_at   timestamptz NOT NULL,
  expires_at     timestamptz NOT NULL,
  client_address text NOT NULL CHECK (length(client_address) <= 64),
  user_agent     text NOT NULL CHECK (length(user_agent) <= 200)
);

CREATE INDEX sessions_account ON sessions (account_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);

-- Refresh tokens, only as SHA-256 hashes. Each rotation spends the presented token and adds
-- a new one; a spent token presented again tells that two parties hold the session.
CREATE TABLE refresh_tokens (
  token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
  session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  spent_at   timestamptz
);

CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);
CREATE INDEX refresh_tokens_spent ON refresh_tokens (spent_at) WHERE spent_at IS NOT NULL;

-- Pending registrations and active accounts share one table, so that the uniqueness of
-- a name or an e-mail address across both states is a constraint, never a check-then-insert.
-- A row is pending while activated_at is null; it then holds the hash of its code.
CREATE TABLE accounts (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name               text NOT NULL CHECK (name ~ '^[a-z0-9-]{2,32}$'),
  email              text NOT NULL CHECK (length(email) <= 254),
  phone              text,
  password_hash      text NOT NULL CHECK (password_hash LIKE '$scrypt$%'),
  credential_version integer NOT NULL DEFAULT 1,
  activated_at       timestamptz,
  code_hash          bytea CHECK (octet_length(code_hash) = 32),
  code_sent_at       timestamptz,
  code_expires_at    timestamptz,
  -- When the owner of this active account was last told that someone tried to register
  -- with the address; bounds how often an attacker can make the service mail the owner.
  attempt_notified_at timestamptz,
  CONSTRAINT pending_rows_have_a_code CHECK (
    (activated_at IS NULL) = (code_hash IS NOT NULL AND code_sent_at IS NOT NULL AND code_expires_at IS NOT NULL)
  ),
  CONSTRAINT active_rows_have_no_code CHECK (
    activated_at IS NULL OR (code_hash IS NULL AND code_sent_at IS NULL AND code_expires_at IS NULL)
  )
);

CREATE UNIQUE INDEX accounts_name_key ON accounts (name);
-- Addresses compare without regard to case; the spec's pattern allows ASCII only.
CREATE UNIQUE INDEX accounts_email_key ON accounts (lower(email));
CREATE UNIQUE INDEX accounts_code_hash_key ON accounts (code_hash) WHERE code_hash IS NOT NULL;
CREATE INDEX accounts_pending_expiry ON accounts (code_expires_at) WHERE activated_at IS NULL;

-- Every e-mail is written here in the transaction of the change that causes it, then
-- delivered by a worker. The content is encrypted (it may hold a registration code) and
-- erased once the message is sent; the Message-ID stays the same across retries.
CREATE TABLE outbox (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_id      text NOT NULL UNIQUE,
  kind            text NOT NULL,
  recipient       text NOT NULL,
  sealed_content  bytea,
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  last_error      text,
  created_at      timestamptz NOT NULL,
  sent_at         timestamptz,
  CONSTRAINT pending_messages_have_content CHECK (state <> 'pending' OR sealed_content IS NOT NULL),
  CONSTRAINT sent_messages_have_no_content CHECK (state <> 'sent' OR (sealed_content IS NULL AND sent_at IS NOT NULL))
);

CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'pending';

-- A sign-in beyond SESSIONS_PER_ACCOUNT ends the account's least recently used session, and
-- the owner sees why in the activity view.
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type IN (
  'activated', 'signed-in', 'sign-in-failed', 'password-changed', 'reset-requested',
  'password-reset', 'session-revoked', 'signed-out-everywhere', 'refresh-retried', 'refresh-token-reused',
  'session-evicted'));

-- Sent mail keeps no address: the recipient is erased with the content once a message is sent,
-- and finished messages (sent or failed) are swept a week after they were queued.
ALTER TABLE outbox ALTER COLUMN recipient DROP NOT NULL;
UPDATE outbox SET recipient = NULL WHERE state = 'sent';
ALTER TABLE outbox ADD CONSTRAINT sent_messages_have_no_recipient CHECK (state <> 'sent' OR recipient IS NULL);
ALTER TABLE outbox ADD CONSTRAINT unsent_messages_have_a_recipient CHECK (state = 'sent' OR recipient IS NOT NULL);
CREATE INDEX outbox_finished ON outbox (created_at) WHERE state <> 'pending';

-- A registration or password reset request only records that it was asked; a worker resolves it
-- moments later (src/accounts/request-resolver.ts). The request thus writes the same rows
-- whatever the address holds, and neither those rows nor its timing tell whether the address
-- has an account. A row lives until resolved (or the sweep finds it stale).
CREATE TABLE registration_requests (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name          text NOT NULL CHECK (name ~ '^[a-z0-9-]{2,32}$'),
  address       text NOT NULL CHECK (length(address) <= 254),
  phone         text,
  password_hash text NOT NULL CHECK (password_hash LIKE '$scrypt$%'),
  expires_at    timestamptz NOT NULL,
  requested_at  timestamptz NOT NULL
);

CREATE TABLE reset_requests (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  address        text NOT NULL CHECK (length(address) <= 254),
  client_address text NOT NULL CHECK (length(client_address) <= 64),
  requested_at   timestamptz NOT NULL
);

-- Strangers' kinds of event (failed sign-ins, reset requests) are swept sooner than the rest.
CREATE INDEX security_events_strangers ON security_events (occurred_at) WHERE type IN ('sign-in-failed', 'reset-requested');

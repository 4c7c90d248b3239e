-- Webhook events, each written in the transaction of the change that causes it (only while
-- WEBHOOK_URL is set), then POSTed by a worker after commit (src/webhooks/). A table of its own
-- rather than a kind of outbox row: an event has no recipient address and no encrypted content,
-- it is ordered per account, and it is claimed with a lease instead of a row lock held while
-- the receiver answers.
--
-- No foreign key to accounts: the events of a deleted account, account.deleted last, must still
-- leave after the account row is gone. They are keyed by its public id, never by the row id.
CREATE TABLE webhook_events (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The `webhook-id` header: the same on every attempt, so that receivers can drop duplicates.
  webhook_id      text NOT NULL UNIQUE CHECK (webhook_id ~ '^msg_[A-Za-z0-9_-]{1,64}$'),
  type            text NOT NULL CHECK (type IN (
    'account.activated', 'account.deleted', 'account.email_changed', 'password.changed',
    'password.reset', 'sessions.revoked', 'second_factor.enabled', 'second_factor.disabled')),
  account         uuid NOT NULL,
  -- The exact bytes that are signed and sent; erased once delivered, as mail content is.
  body            text,
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  -- A worker that claims the event owns it until then; a worker that died leaves it to another.
  claimed_until   timestamptz,
  -- The status code or the network error of the last failed attempt; never the receiver's answer.
  last_error      text,
  created_at      timestamptz NOT NULL,
  delivered_at    timestamptz,
  CONSTRAINT pending_events_have_a_body CHECK (state <> 'pending' OR body IS NOT NULL),
  CONSTRAINT delivered_events_have_no_body CHECK (state <> 'delivered' OR (body IS NULL AND delivered_at IS NOT NULL))
);

-- For the claim's order check: does this account have an earlier event pending?
CREATE INDEX webhook_events_pending ON webhook_events (account, id) WHERE state = 'pending';
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_events_delivered ON webhook_events (delivered_at) WHERE state = 'delivered';

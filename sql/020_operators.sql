-- Operators (issue 33): an account can be disabled, and an operator's actions are security
-- events that say so, with the reason the operator gave.
ALTER TABLE accounts
  ADD COLUMN disabled_at timestamptz,
  ADD COLUMN disabled_reason text CHECK (length(disabled_reason) <= 500),
  ADD CONSTRAINT only_active_accounts_are_disabled CHECK (disabled_at IS NULL OR activated_at IS NOT NULL),
  ADD CONSTRAINT disabled_accounts_have_a_reason CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL));
COMMENT ON COLUMN accounts.disabled_at IS 'Set by an operator: while set, the account has no session, and sign-in is refused (use-cases/disable-account.ts).';

ALTER TABLE security_events
  ADD COLUMN actor text CHECK (actor = 'operator'),
  ADD COLUMN reason text CHECK (length(reason) <= 500),
  ADD CONSTRAINT only_operators_give_reasons CHECK (reason IS NULL OR actor IS NOT NULL);
COMMENT ON COLUMN security_events.actor IS 'NULL: the client of the request (client_address); operator: an operator, with the reason given.';

-- The operator's event types join whatever types the constraint allows so far, read from it
-- rather than listed here, so that types added by other migrations stay allowed.
DO $$
DECLARE
  allowed text[];
BEGIN
  SELECT array_agg(DISTINCT m[1]) INTO allowed
  FROM pg_constraint AS c,
    regexp_matches(substring(pg_get_constraintdef(c.oid) FROM 'ANY \((.*)\)'), '([a-z][a-z-]*)', 'g') AS m
  WHERE c.conrelid = 'security_events'::regclass AND c.conname = 'security_events_type_check' AND m[1] <> 'text';
  allowed := allowed || ARRAY['account-disabled', 'account-enabled', 'sessions-ended', 'reset-forced', 'throttle-cleared'];
  ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
  EXECUTE format('ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY (%L::text[]))',
    (SELECT array_agg(DISTINCT value ORDER BY value) FROM unnest(allowed) AS value));
END $$;

-- The operator's webhook event types (webhooks/events.ts), added the same way.
DO $$
DECLARE
  allowed text[];
BEGIN
  SELECT array_agg(DISTINCT m[1]) INTO allowed
  FROM pg_constraint AS c, regexp_matches(pg_get_constraintdef(c.oid), '([a-z_]+\.[a-z_]+)', 'g') AS m
  WHERE c.conrelid = 'webhook_events'::regclass AND c.conname = 'webhook_events_type_check';
  allowed := allowed || ARRAY['account.disabled', 'account.enabled', 'account.unlocked', 'password.reset_forced'];
  ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_type_check;
  EXECUTE format('ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_type_check CHECK (type = ANY (%L::text[]))',
    (SELECT array_agg(DISTINCT value ORDER BY value) FROM unnest(allowed) AS value));
END $$;

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

-- The operator's event types and webhook event types (webhooks/events.ts), written out.
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY ('{account-disabled,account-enabled,activated,email-change-requested,email-changed,passkey-added,passkey-counter-regressed,passkey-removed,password-changed,password-reset,recovery-code-used,refresh-retried,refresh-token-reused,reset-forced,reset-requested,session-evicted,session-revoked,sessions-ended,sign-in-failed,signed-in,signed-out-everywhere,throttle-cleared,totp-disabled,totp-enabled}'::text[]));
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_type_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_type_check CHECK (type = ANY ('{account.activated,account.deleted,account.disabled,account.email_changed,account.enabled,account.unlocked,passkey.added,passkey.removed,password.changed,password.reset,password.reset_forced,second_factor.disabled,second_factor.enabled,sessions.revoked}'::text[]));

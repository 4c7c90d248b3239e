-- A passkey's rename is a security event (passkey-renamed) and a webhook event (passkey.renamed),
-- as its addition and removal are. The type lists, written out.
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY ('{account-disabled,account-enabled,activated,email-change-requested,email-changed,passkey-added,passkey-counter-regressed,passkey-removed,passkey-renamed,password-changed,password-reset,recovery-code-used,refresh-retried,refresh-token-reused,reset-forced,reset-requested,session-evicted,session-revoked,sessions-ended,sign-in-failed,signed-in,signed-out-everywhere,throttle-cleared,totp-disabled,totp-enabled}'::text[]));
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_type_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_type_check CHECK (type = ANY ('{account.activated,account.deleted,account.disabled,account.email_changed,account.enabled,account.unlocked,passkey.added,passkey.removed,passkey.renamed,password.changed,password.reset,password.reset_forced,second_factor.disabled,second_factor.enabled,sessions.revoked}'::text[]));

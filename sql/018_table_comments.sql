-- The reasons, kept in the schema itself: every table and the columns whose meaning is not in
-- their name, so that sql/schema.sql (pg_dump) reads as documentation. No data changes.
COMMENT ON TABLE accounts IS 'Accounts, pending (activated_at NULL, until expires_at) or active. id is internal; public_id is the sub of tokens and the account of webhooks.';
COMMENT ON COLUMN accounts.password_hash IS 'A PHC string: $scrypt$ln=,r=,p=$salt$hash, or a chain of layers after a SCRYPT_PARAMS change (accounts/passwords.ts).';
COMMENT ON COLUMN accounts.expires_at IS 'A pending registration lives until then; NULL once active.';
COMMENT ON COLUMN accounts.attempt_notified_at IS 'When the owner was last told that someone tried to register with their address; bounds those notices.';
COMMENT ON TABLE address_quotas IS 'Per purpose and address (a keyed hash, keyed_hash_keys): the code requests of the last 24 hours, for the cooldown and the daily cap.';
COMMENT ON TABLE login_budgets IS 'The sign-in throttle''s budget per identifier (keyed hash of a name, an address or account:<public id>): tokens refill LOGIN_FAILURES_PER_HOUR an hour.';
COMMENT ON TABLE login_delays IS 'The sign-in throttle''s doubling delay per identifier and client network (keyed hashes), after four failures.';
COMMENT ON TABLE login_known_clients IS 'Client networks that proved an identifier''s password in the last 30 days; they pass a spent budget.';
COMMENT ON TABLE name_holds IS 'A name held for the address that asked for it until the code lifetime ends, whatever the address holds, so that a second request with the name tells nothing about the first address.';
COMMENT ON TABLE one_time_codes IS 'E-mailed codes of every purpose, as SHA-256 hashes only; single use (deleting the row is the use).';
COMMENT ON COLUMN one_time_codes.session_id IS 'For an e-mail change: the session that asked for it, the one the change keeps.';
COMMENT ON TABLE outbox IS 'Mail to send, sent by the outbox worker (mail/outbox.ts); a sent row keeps neither content nor recipient, and goes after 7 days.';
COMMENT ON COLUMN outbox.lease IS 'Set by the worker that claimed the row; only that worker may record the outcome.';
COMMENT ON TABLE recovery_codes IS 'Second-factor recovery codes, as hashes; single use.';
COMMENT ON TABLE refresh_tokens IS 'Refresh tokens as SHA-256 hashes. A spent one is kept a day, so that presenting it again is seen as reuse.';
COMMENT ON COLUMN refresh_tokens.parent_hash IS 'The token this one replaced: presented again within the retry window, it is answered with this one (sql/008 refresh_session).';
COMMENT ON TABLE registration_requests IS 'Registration requests recorded by POST /acc/reg/code and resolved later by the request resolver, so that the answer does not tell whether the address has an account.';
COMMENT ON TABLE reset_requests IS 'Reset requests recorded by POST /acc/pwd/code and resolved later by the request resolver, for the same reason.';
COMMENT ON TABLE second_factors IS 'One TOTP factor per account: pending until its first code confirms it (activated_at).';
COMMENT ON COLUMN second_factors.last_used_step IS 'The last TOTP step used: a code of that step or an earlier one is refused, so each code works once.';
COMMENT ON TABLE security_events IS 'Each account''s security activity (GET /acc/me/events); kept EVENT_RETENTION_DAYS, strangers'' failed sign-ins and reset requests 7 days.';
COMMENT ON TABLE sessions IS 'Sign-in sessions; deleting one revokes its refresh tokens (by cascade) and its access tokens (every request reads it).';
COMMENT ON TABLE webhook_events IS 'Events for WEBHOOK_URL, delivered in order per account; a delivered row keeps no body and goes after 7 days. A trigger (sql/016) queues an event no earlier than its account''s pending ones.';
COMMENT ON COLUMN webhook_events.claimed_until IS 'Set by the worker that claimed the row, until then; only that worker may record the outcome.';

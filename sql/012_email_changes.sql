-- Changing an account's e-mail address. A pending change is a one-time code of its own purpose,
-- 'email-change', whose row also carries what the code confirms: the new address as typed (an
-- address is not a secret; the code is, and only its hash is stored) and the session that asked.
-- The session's foreign key cascades: a pending change ends with the session that asked for it,
-- so signing out everywhere, a password change or a reset cancels it.
ALTER TABLE one_time_codes ADD COLUMN new_email text CHECK (length(new_email) <= 254);
ALTER TABLE one_time_codes ADD COLUMN session_id uuid REFERENCES sessions (id) ON DELETE CASCADE;
ALTER TABLE one_time_codes ADD CONSTRAINT email_change_codes_carry_the_change
  CHECK ((purpose = 'email-change') = (new_email IS NOT NULL AND session_id IS NOT NULL));
CREATE INDEX one_time_codes_session ON one_time_codes (session_id) WHERE session_id IS NOT NULL;

-- The new purpose, for codes and address quotas, and the two new event types. (Rewritten from a
-- DO block that read the lists back from pg_get_constraintdef; the constraints it makes are the
-- same, and storage/migrations.ts accepts the earlier text's checksum.)
ALTER TABLE one_time_codes DROP CONSTRAINT one_time_codes_purpose_check;
ALTER TABLE one_time_codes ADD CONSTRAINT one_time_codes_purpose_check CHECK (purpose = ANY ('{email-change,registration,reset}'::text[]));
ALTER TABLE address_quotas DROP CONSTRAINT address_quotas_purpose_check;
ALTER TABLE address_quotas ADD CONSTRAINT address_quotas_purpose_check CHECK (purpose = ANY ('{email-change,registration,reset}'::text[]));
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY ('{activated,email-change-requested,email-changed,password-changed,password-reset,recovery-code-used,refresh-retried,refresh-token-reused,reset-requested,session-evicted,session-revoked,sign-in-failed,signed-in,signed-out-everywhere,totp-disabled,totp-enabled}'::text[]));

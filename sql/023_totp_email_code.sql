-- The owner's way back in (issue 30): a TOTP factor survives a password reset, so enrolling one
-- needs a code mailed to the account's address, like a passkey ('totp' codes, and a quota of
-- their own per account: each enrollment request sends mail).
ALTER TABLE one_time_codes DROP CONSTRAINT one_time_codes_purpose_check;
ALTER TABLE one_time_codes ADD CONSTRAINT one_time_codes_purpose_check
  CHECK (purpose = ANY ('{email-change,passkey,registration,reset,totp}'::text[]));
ALTER TABLE address_quotas DROP CONSTRAINT address_quotas_purpose_check;
ALTER TABLE address_quotas ADD CONSTRAINT address_quotas_purpose_check
  CHECK (purpose = ANY ('{account-email-change,email-change,passkey,registration,reset,totp}'::text[]));

-- An e-mail change needs the current mailbox too (found by an outside tester): the request mails
-- a second code, 'email-change-current', to the address the account has, and the confirmation
-- needs both. Without it, a password alone moved the account to the thief's mailbox, and every
-- later code (a second factor's, a passkey's, a reset's) went there.
ALTER TABLE one_time_codes DROP CONSTRAINT one_time_codes_purpose_check;
ALTER TABLE one_time_codes ADD CONSTRAINT one_time_codes_purpose_check
  CHECK (purpose = ANY ('{email-change,email-change-current,passkey,registration,reset,totp}'::text[]));

-- Deleting an account needs the mailbox (a code of purpose 'deletion', counted per account), and
-- leaves its name held for the address that had it (NAME_HOLD_DAYS): only that address may
-- register the name again during the hold. Such a hold keeps the name and a keyed hash of the
-- address, never the address itself. A reset request from a network known to the address counts
-- in a quota of its own ('reset-known', keyed by the address and the network), so that a stranger
-- who spent the address's quota does not keep the owner from resetting.
ALTER TABLE name_holds ALTER COLUMN address DROP NOT NULL;
ALTER TABLE name_holds ADD COLUMN address_key bytea CHECK (octet_length(address_key) = 32);
ALTER TABLE name_holds ADD CONSTRAINT name_holds_one_holder CHECK ((address IS NULL) <> (address_key IS NULL));
COMMENT ON TABLE name_holds IS
  'A name held for one address: for a pending registration until its code expires (the address), or for '
  'NAME_HOLD_DAYS after its account was deleted (a keyed hash of the address).';

ALTER TABLE one_time_codes DROP CONSTRAINT one_time_codes_purpose_check;
ALTER TABLE one_time_codes ADD CONSTRAINT one_time_codes_purpose_check
  CHECK (purpose = ANY ('{deletion,email-change,email-change-current,passkey,registration,reset,totp}'::text[]));
ALTER TABLE address_quotas DROP CONSTRAINT address_quotas_purpose_check;
ALTER TABLE address_quotas ADD CONSTRAINT address_quotas_purpose_check
  CHECK (purpose = ANY ('{account-email-change,deletion,email-change,passkey,registration,reset,reset-known,totp}'::text[]));

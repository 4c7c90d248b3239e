-- An account's own quota of e-mail change requests (use-cases/request-email-change.ts: once a
-- minute and ten a day, whatever new address it names) gets a purpose of its own in
-- address_quotas, 'account-email-change', whose key is the keyed hash of the account's public
-- id. Until now it was a row of purpose 'email-change' keyed by the hash of a fake address,
-- 'account:<public id>', told apart from the addresses only by the missing '@'. Those rows
-- cannot be told apart here (the key is a keyed hash), so they stay and age out within a day
-- (deleteStaleQuotas); each account's quota starts afresh once, at this upgrade.
ALTER TABLE address_quotas DROP CONSTRAINT address_quotas_purpose_check;
ALTER TABLE address_quotas ADD CONSTRAINT address_quotas_purpose_check
  CHECK (purpose IN ('registration', 'reset', 'email-change', 'account-email-change'));
COMMENT ON TABLE address_quotas IS 'Per purpose and key: the code requests of the last 24 hours, for the cooldown and the daily cap. The key is a keyed hash (keyed_hash_keys) of the address, or for account-email-change of the account''s public id.';

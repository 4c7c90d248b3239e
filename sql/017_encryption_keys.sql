-- One key per purpose (docs/security.md, "Keys"). Until this migration, TOKEN_SECRET both
-- signed tokens and, through HKDF, sealed TOTP secrets, queued mail and the keys of the keyed
-- hashes, as `IV | tag | ciphertext`. Sealed values now carry a version byte, the id of their
-- ENCRYPTION_KEYS key and associated data that names their purpose and row (src/sealing.ts,
-- version 2). The values sealed before are marked here as version 1; the first start of the
-- service then opens them with TOKEN_SECRET and seals them again under ENCRYPTION_KEYS
-- (src/reseal.ts), keyed_hash_keys last, so that a start that stops half-way is finished by
-- the next one.
UPDATE second_factors SET sealed_secret = '\x01'::bytea || sealed_secret;
UPDATE outbox SET sealed_content = '\x01'::bytea || sealed_content WHERE sealed_content IS NOT NULL;
UPDATE keyed_hash_keys SET sealed_key = '\x01'::bytea || sealed_key;

COMMENT ON COLUMN second_factors.sealed_secret IS 'The TOTP secret, sealed under ENCRYPTION_KEYS and bound to account_id (src/sealing.ts).';
COMMENT ON COLUMN outbox.sealed_content IS 'The message, sealed under ENCRYPTION_KEYS and bound to message_id; erased once sent.';
COMMENT ON TABLE keyed_hash_keys IS 'The random keys of the keyed hashes of the throttle and quota tables (src/keyed-hashes.ts), sealed under ENCRYPTION_KEYS.';

-- The ES256 token signing keys of TOKEN_ALG=ES256 (src/sessions/signing-keys.ts): shared by
-- every instance, the private key only sealed. A key signs from created_at plus a lead of two
-- minutes; the sweep deletes a key once a newer one has signed for longer than TOKEN_TTL.
-- The public key is not stored: each instance derives it from the private key, and refuses a
-- key whose kid is not its thumbprint, so that writing to this table cannot plant a key.
CREATE TABLE signing_keys (
  kid                text PRIMARY KEY,
  sealed_private_key bytea NOT NULL,
  created_at         timestamptz NOT NULL
);
COMMENT ON TABLE signing_keys IS 'ES256 token signing keys (TOKEN_ALG=ES256); kid is the RFC 7638 thumbprint of the public key.';
COMMENT ON COLUMN signing_keys.sealed_private_key IS 'PKCS #8 private key, sealed under ENCRYPTION_KEYS and bound to kid.';

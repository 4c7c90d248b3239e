-- A passkey's registration challenge travels sealed in its challenge_id, as the sign-in
-- challenge always has (src/use-cases/passkeys.ts sealChallenge), bound to the account and the
-- session that asked; a presented one is recorded in spent_passkey_challenges, which makes it
-- single use. One mechanism for both ceremonies, and this table is no longer written. A
-- registration started before the upgrade must ask for new options.
DROP TABLE passkey_challenges;
COMMENT ON TABLE spent_passkey_challenges IS 'Passkey challenges already presented, kept until they expire (single use)';

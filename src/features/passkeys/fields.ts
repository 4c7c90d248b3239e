import { patterns } from '../../core/fields.ts';
import { explained, field, type Schema } from '../../http/validate.ts';

/** The bodies of the passkey routes, checked by http/validate.ts. */
/** Ours (passkeys): a name its owner gives a passkey, any printable text. */
// No control characters (C0, DEL, C1), format characters or line and paragraph separators: a
// right-to-left override in a name would reorder the notices that show it, a line break split them.
// No "=?" either: in a mail header (an operator's subject may show the name) it may start an RFC
// 2047 encoded word, which mail clients decode, to a right-to-left override too.
const passkeyName = {
  ...field(/^(?!.*=\?)(?=.*\S)[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]{1,64}$/u),
  mismatch: 'must be 1 to 64 characters, not all spaces, without control or format characters, line or paragraph ' +
    'separators, or "=?"',
};

export const passkeyOptionsSchema = {
  pwd: field(patterns.password), otp: field(patterns.otp, { required: false }),
} satisfies Schema;

/**
 * Without `credential`, an object that the verifier reads (features/passkeys/webauthn.ts). The
 * challenge_id is a sealed value in base64url (features/passkeys/manage.ts sealChallenge).
 */
export const passkeyAdditionSchema = {
  challenge_id: field(explained(/^[A-Za-z0-9_-]{1,200}$/, 'the challenge_id of the options answer')),
  email_code: field(patterns.code),
  name: { ...passkeyName, required: false },
} satisfies Schema;

export const passkeyRenameSchema = { name: passkeyName } satisfies Schema;

export const passkeyRemovalSchema = { pwd: field(patterns.password) } satisfies Schema;

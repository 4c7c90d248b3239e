import { localePattern } from '../config/locales.ts';
import { explained, field, type Schema } from '../http/validate.ts';

/**
 * The spec's regexes, used as written (JavaScript, no `u` flag), except the password:
 * the spec says "6 to 32 characters", so `u` makes `.` count code points, not UTF-16 units.
 */
export const patterns = {
  name: explained(/^[a-z0-9-]{2,32}$/, '2 to 32 lower-case letters, digits or hyphens'),
  email: explained(
    /^[a-zA-Z0-9-._]{1,64}\@[a-zA-Z0-9\[]{1}[a-zA-Z0-9.-:]{1,61}[a-zA-Z0-9\]]{1}$/,
    'an e-mail address such as alice@example.com, with letters, digits, "-", "." or "_" before the @',
  ),
  password: explained(/^.{6,32}$/u, '6 to 32 characters'),
  phone: explained(/^\+[0-9]{2}\s[0-9]{3}\s([0-9]{3}|[0-9]{4})\s[0-9]{4}$/, 'a phone number like +41 123 456 7890'),
  code: explained(/^([a-zA-Z]{4}-){3}[a-zA-Z]{4}$/, 'the mailed code: four groups of four letters, joined by hyphens'),
  /** Ours (second factor): a 6-digit TOTP code. */
  totpCode: explained(/^[0-9]{6}$/, 'the 6 digits that the authenticator app shows'),
  /** Ours: a TOTP code or a recovery code (16 base32 letters, hyphens after each four optional). */
  otp: explained(
    /^([0-9]{6}|[a-zA-Z2-7]{4}(-?[a-zA-Z2-7]{4}){3})$/,
    'the 6 digits of the authenticator app, or a recovery code (four groups of four letters and digits 2 to 7)',
  ),
} as const;

export const registrationSchema = {
  name: field(patterns.name),
  email: field(patterns.email),
  pwd: field(patterns.password),
  phone: field(patterns.phone, { required: false, nullable: true }),
  /** Ours: the locale of the account's mail; without it, Accept-Language's, if the templates have it. */
  locale: field(localePattern, { required: false, nullable: true }),
} satisfies Schema;

export const activationSchema = { code: field(patterns.code) } satisfies Schema;

export const resetCodeRequestSchema = { email: field(patterns.email) } satisfies Schema;

export const passwordResetSchema = {
  code: field(patterns.code),
  new_pwd: field(patterns.password),
  // Ours: `remove` takes every passkey and identity at a provider away with the reset (core/erasure.ts).
  passkeys: field(explained(/^(keep|remove)$/, 'keep or remove'), { required: false }),
} satisfies Schema;

export const accountDeletionSchema = {
  pwd: field(patterns.password),
  // Required when the account has an active second factor; that is checked after the password.
  otp: field(patterns.otp, { required: false }),
  // The code the first request mailed to the account's address; without it, one is mailed.
  email_code: field(patterns.code, { required: false }),
} satisfies Schema;

export const passwordChangeSchema = {
  old_pwd: field(patterns.password),
  new_pwd: field(patterns.password),
} satisfies Schema;

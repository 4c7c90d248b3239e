import { patterns } from '../../core/fields.ts';
import { field, type Schema } from '../../http/validate.ts';

/** The bodies of the second factor's routes, checked by http/validate.ts. */
export const totpEnrollmentSchema = { pwd: field(patterns.password) } satisfies Schema;

/** `email_code`: the code that the enrollment mailed to the account's address. */
export const totpConfirmationSchema = {
  code: field(patterns.totpCode),
  email_code: field(patterns.code),
} satisfies Schema;

export const totpRemovalSchema = { pwd: field(patterns.password), otp: field(patterns.otp) } satisfies Schema;

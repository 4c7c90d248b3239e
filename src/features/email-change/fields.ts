import { patterns } from '../../core/fields.ts';
import { field, type Schema } from '../../http/validate.ts';

/** The bodies of the e-mail change's routes, checked by http/validate.ts. */
/** The new address is checked like a registration's. */
export const emailChangeRequestSchema = {
  pwd: field(patterns.password),
  email: field(patterns.email),
  // Required when the account has an active second factor; that is checked after the password.
  otp: field(patterns.otp, { required: false }),
} satisfies Schema;

export const emailChangeSchema = { code: field(patterns.code), current_code: field(patterns.code) } satisfies Schema;

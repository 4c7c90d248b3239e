import { patterns } from '../../core/fields.ts';
import { explained, field, type Schema } from '../../http/validate.ts';

/** The bodies and queries of the provider routes, checked by http/validate.ts. */
export const back = {
  redirect_uri: { ...field(/^https?:\/\/[\x21-\x7e]{1,2040}$/), mismatch: 'must be one of OIDC_REDIRECT_URIS' },
  state: { ...field(/^[\x21-\x7e]{1,512}$/), mismatch: 'must be 1 to 512 printable characters without spaces' },
  code_challenge: {
    ...field(/^[A-Za-z0-9_-]{43}$/), mismatch: 'must be the base64url SHA-256 of a PKCE code_verifier (43 characters)',
  },
} satisfies Schema;
export const providerName = { ...field(/^[a-z0-9-]{1,32}$/), mismatch: 'must name a provider of OIDC_PROVIDERS' };
export const linkOptionsSchema = {
  provider: providerName, pwd: field(patterns.password), otp: field(patterns.otp, { required: false }), ...back,
} satisfies Schema;
const verifier = {
  ...field(/^[A-Za-z0-9._~-]{43,128}$/), mismatch: 'must be 43 to 128 characters of A-Z, a-z, 0-9 and -._~ (RFC 7636)',
};
const callbackCode = {
  code: field(explained(/^[A-Za-z0-9_-]{43}$/, 'the code that the callback gave the application (43 characters)')),
  code_verifier: verifier, redirect_uri: back.redirect_uri,
};
export const linkSchema = { ...callbackCode, email_code: field(patterns.code) } satisfies Schema;
export const identityRemovalSchema = { pwd: field(patterns.password) } satisfies Schema;

export const registrationSchema = { ...callbackCode, name: field(patterns.name) } satisfies Schema;

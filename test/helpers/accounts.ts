import { form, type HttpResult } from './http.ts';
import type { TestService } from './service.ts';

/** The tokens of a sign-in (RFC 6749, 5.1). */
export type Tokens = { access_token: string; refresh_token: string; token_type: string; expires_in: number };

/** An entry of GET /acc/me/events. */
export type SecurityEvent = {
  type: string;
  occurred_at: string;
  actor: 'client' | 'operator';
  client_address: string | null;
  session_id: string | null;
};

export type SignInOptions = {
  /** A TOTP or recovery code, for an account with a second factor. */
  otp?: string;
  /** The client address, sent as X-Forwarded-For: it counts only where the service trusts a proxy (TRUST_PROXY). */
  address?: string;
  userAgent?: string;
  /** The form encoding that OAuth clients send, instead of JSON. */
  form?: boolean;
};

/** POST /auth/token with the password grant, as a client signs in; the answer as it came. */
export function passwordGrant(app: Pick<TestService, 'call'>, username: string, password: string, options: SignInOptions = {}): Promise<HttpResult> {
  const fields = { grant_type: 'password', username, password, ...(options.otp === undefined ? {} : { otp: options.otp }) };
  const headers = {
    ...(options.address === undefined ? {} : { 'x-forwarded-for': options.address }),
    ...(options.userAgent === undefined ? {} : { 'user-agent': options.userAgent }),
  };
  const body = options.form === true ? form(fields) : { json: fields };
  return app.call('POST', '/auth/token', { ...body, headers: { ...body.headers, ...headers } });
}

/** A sign-in that must succeed: its tokens. */
export async function signedIn(app: Pick<TestService, 'call'>, username: string, password: string, options: SignInOptions = {}): Promise<Tokens> {
  const response = await passwordGrant(app, username, password, options);
  if (response.status !== 200) throw new Error(`sign-in failed: ${response.status} ${response.text}`);
  return response.json as Tokens;
}

/** The security events of the token's account, newest first. */
export async function eventsOf(app: Pick<TestService, 'call'>, token: string): Promise<SecurityEvent[]> {
  const response = await app.call('GET', '/acc/me/events', { token });
  if (response.status !== 200) throw new Error(`events failed: ${response.status} ${response.text}`);
  return response.json.events as SecurityEvent[];
}

import { form, type CallOptions, type HttpResult } from './http.ts';
import type { TestService } from './service.ts';
import { codeIn, type ReceivedMail } from './smtp.ts';
import { referenceTotp } from './totp.ts';

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
  /** The socket's source address, in 127.0.0.0/8: the client address where no proxy is trusted. */
  source?: string;
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
  const localAddress = options.source;
  return app.call('POST', '/auth/token', { ...body, headers: { ...body.headers, ...headers }, localAddress });
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

type TotpApp = Pick<TestService, 'call' | 'smtp' | 'clock'>;
type Owner = { email: string; pwd: string };

/**
 * POST /acc/me/totp, and the code it mailed to the account: the pending secret (base32) and the
 * `email_code` that confirming needs. A second enrollment of one account within a minute is
 * refused (the request quota): advance the clock first.
 */
export async function startTotp(
  app: TotpApp, token: string, account: Owner, headers: Record<string, string> = {},
): Promise<{ secret: string; uri: string; emailCode: string }> {
  const before = app.smtp.messages.length;
  const enrolled = await app.call('POST', '/acc/me/totp', { token, json: { pwd: account.pwd }, headers });
  if (enrolled.status !== 200) throw new Error(`enrollment failed: ${enrolled.status} ${enrolled.text}`);
  const isCode = (mail: ReceivedMail) =>
    mail.to === account.email && mail.subject === 'Your code to enable a second factor';
  const mail = await app.smtp.waitFor((mail) => isCode(mail) && app.smtp.messages.indexOf(mail) >= before);
  return { secret: enrolled.json.secret as string, uri: enrolled.json.uri as string, emailCode: codeIn(mail) };
}

/** The service's current RFC 6238 step (its clock, which a test may move forward). */
export const totpStepOf = (app: Pick<TestService, 'clock'>): number => Math.floor(app.clock.now().getTime() / 30_000);

/** Enrolls and confirms a TOTP factor with a code of the current step: its secret, recovery codes and that step. */
export async function enableTotp(app: TotpApp, token: string, account: Owner, headers: Record<string, string> = {}) {
  const { secret, emailCode } = await startTotp(app, token, account, headers);
  const step = totpStepOf(app);
  const json = { code: referenceTotp(secret, step * 30), email_code: emailCode };
  const confirmed = await app.call('POST', '/acc/me/totp/confirm', { token, json, headers });
  if (confirmed.status !== 200) throw new Error(`confirmation failed: ${confirmed.status} ${confirmed.text}`);
  return { secret, recoveryCodes: confirmed.json.recovery_codes as string[], step };
}

/**
 * The body of POST /acc/email for a code mailed to a new address: that code, and the one the
 * same request mailed to the current address. The two are matched by the account's name, which
 * both mails carry, and by arrival: the notice that came nearest the code mail. A code no mail
 * carries gets a well-formed code that matches nothing.
 */
export async function emailChangeBody(
  app: Pick<TestService, 'smtp'>, code: string,
): Promise<{ code: string; current_code: string }> {
  const { messages } = app.smtp;
  const codeMail = messages.find((mail) => mail.subject === 'Confirm your new e-mail address' && mail.text.includes(code.toUpperCase()));
  const name = codeMail === undefined ? null : /the account "([^"]+)"/.exec(codeMail.text)?.[1];
  if (name === null || name === undefined) return { code, current_code: 'ABCD-EFGH-JKLM-NPQR' };
  const isNotice = (mail: ReceivedMail) =>
    mail.subject === 'A change of your e-mail address was asked for' && mail.text.startsWith(`Hello ${name},`);
  await app.smtp.waitFor(isNotice);
  const at = messages.indexOf(codeMail!);
  const notices = messages.filter(isNotice).sort((a, b) => Math.abs(messages.indexOf(a) - at) - Math.abs(messages.indexOf(b) - at));
  return { code, current_code: codeIn(notices[0]!) };
}

/**
 * DELETE /acc/me's first step (`pwd`, and `otp` in `body` where a factor is active): the code it
 * mailed to the account's address. A second request of one account within a minute is refused
 * (the request quota): advance the clock first.
 */
export async function deletionCode(
  app: TotpApp, token: string, account: Owner, body: Record<string, string> = {}, options: CallOptions = {},
): Promise<string> {
  const before = app.smtp.messages.length;
  const asked = await app.call('DELETE', '/acc/me', { ...options, token, json: { pwd: account.pwd, ...body } });
  if (asked.status !== 202) throw new Error(`deletion request failed: ${asked.status} ${asked.text}`);
  const isCode = (mail: ReceivedMail) =>
    mail.to === account.email && mail.subject === 'Your code to delete your account' &&
    app.smtp.messages.indexOf(mail) >= before;
  return codeIn(await app.smtp.waitFor(isCode));
}

/** Deletes the account in DELETE /acc/me's two steps, with the mailed code; the last answer as it came. */
export async function deleteAccount(
  app: TotpApp, token: string, account: Owner, body: Record<string, string> = {}, options: CallOptions = {},
): Promise<HttpResult> {
  const emailCode = await deletionCode(app, token, account, body, options);
  return app.call('DELETE', '/acc/me', { ...options, token, json: { pwd: account.pwd, ...body, email_code: emailCode } });
}

import { formatCount } from '../count.ts';

/** What the outbox stores and the transport sends; never logged, as it may hold a code. */
export type MailContent = { subject: string; text: string; html: string };
export type MailKind = 'registration-code' | 'account-active' | 'password-changed' | 'registration-attempt';
export type OutgoingMail = { kind: MailKind; to: string; content: MailContent };

export function registrationCodeMail(to: string, name: string, code: string, expiresAt: Date, lifetimeSeconds: number): OutgoingMail {
  const minutes = Math.round(lifetimeSeconds / 60);
  return compose('registration-code', to, 'Your registration code', [
    `Hello ${name},`,
    'your registration code is:',
    code,
    `It is valid for ${formatCount(minutes, 'minute')}, until ${isoUtc(expiresAt)}. Send it to activate your account.`,
    'If you did not ask to register, ignore this message: without the code no account is created.',
  ]);
}

export function accountActiveMail(to: string, name: string): OutgoingMail {
  return compose('account-active', to, 'Your account is active', [
    `Hello ${name},`,
    'your account is now active. You can sign in with your name or this address and your password.',
  ]);
}

export function passwordChangedMail(to: string, name: string, changedAt: Date, clientAddress: string): OutgoingMail {
  return compose('password-changed', to, 'Your password was changed', [
    `Hello ${name},`,
    `the password of your account was changed at ${isoUtc(changedAt)} from the address ${clientAddress}.`,
    'All sessions signed in before the change have been signed out.',
    'If you did not change it, your account may be compromised: contact support at once.',
  ]);
}

export function registrationAttemptMail(to: string): OutgoingMail {
  return compose('registration-attempt', to, 'Someone tried to register with your address', [
    'Hello,',
    'someone asked to register a new account with this address, which already belongs to your account.',
    'Nothing was changed. If it was you, sign in with your existing account instead.',
    'If it was not you, you can ignore this message.',
  ]);
}

/** ISO 8601 in UTC without fractions, such as 2026-11-21T10:30:00Z. */
export function isoUtc(date: Date): string {
  return date.toISOString().replace(/\.[0-9]{3}Z$/, 'Z');
}

function compose(kind: MailKind, to: string, subject: string, paragraphs: string[]): OutgoingMail {
  const html = `<!doctype html><html><body>${paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`).join('')}</body></html>`;
  return { kind, to, content: { subject, text: `${paragraphs.join('\n\n')}\n`, html } };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

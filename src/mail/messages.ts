import { fewRecoveryCodesLeft } from '../accounts/recovery-codes.ts';
import { formatCount } from '../count.ts';

/** What the outbox stores and the transport sends; never logged, as it may hold a code. */
export type MailContent = { subject: string; text: string; html: string };
export type MailKind = 'registration-code' | 'account-active' | 'password-changed' | 'registration-attempt' | 'reset-code' | 'password-reset' | 'account-deleted'
  | 'totp-enabled' | 'totp-disabled' | 'recovery-code-used';
export type OutgoingMail = { kind: MailKind; to: string; content: MailContent };
/** A message whose recipient the database supplies: the address stored for the account. */
export type UnaddressedMail = Omit<OutgoingMail, 'to'>;

/**
 * The code of a pending registration; it names the account the code activates, which a later
 * request never changes. `repeat`: the address already had this registration waiting, so the
 * mail warns that the code activates what the first request asked for.
 */
export function registrationCodeMail(to: string, name: string, code: string, expiresAt: Date, now: Date, repeat = false): OutgoingMail {
  const warning = repeat
    ? [
        `This address already had a registration waiting. The code activates that registration as it was first asked for: the account "${name}" with the password chosen then, whatever a later request said. If you did not ask for "${name}" yourself, do not use the code; after ${isoUtc(expiresAt)} the address is free for a registration of your own.`,
      ]
    : [];
  return { to, ...compose('registration-code', 'Your registration code', [
    'Hello,',
    `this code activates the account "${name}" with this address:`,
    code,
    `It is valid for ${formatCount(minutesUntil(expiresAt, now), 'minute')}, until ${isoUtc(expiresAt)}. Send it to activate the account.`,
    ...warning,
    `If you did not ask to register "${name}", ignore this message: without the code no account is created.`,
  ]) };
}

export function accountActiveMail(to: string, name: string): OutgoingMail {
  return { to, ...compose('account-active', 'Your account is active', [
    `Hello ${name},`,
    'your account is now active. You can sign in with your name or this address and your password.',
  ]) };
}

export function passwordChangedMail(to: string, name: string, changedAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('password-changed', 'Your password was changed', [
    `Hello ${name},`,
    `the password of your account was changed at ${isoUtc(changedAt)} from the address ${clientAddress}.`,
    'All sessions signed in before the change have been signed out.',
    'If you did not change it, your account may be compromised: contact support at once.',
  ]) };
}

export function registrationAttemptMail(to: string, name: string): OutgoingMail {
  return { to, ...compose('registration-attempt', 'Someone tried to register with your address', [
    `Hello ${name},`,
    'someone asked to register a new account with this address, which already belongs to your account.',
    'Nothing was changed. If it was you, sign in with your existing account instead.',
    'If you forgot your password, ask for a reset code with this address (POST /acc/pwd/code) and set a new one.',
    'If it was not you, you can ignore this message.',
  ]) };
}

/** A reset code. It carries no account name: the code is issued before anything about the account is read. */
export function resetCodeMail(code: string, expiresAt: Date, now: Date, clientAddress: string): UnaddressedMail {
  return compose('reset-code', 'Your password reset code', [
    'Hello,',
    `someone asked at ${isoUtc(now)}, from the address ${clientAddress}, to reset the password of the account with this address. The code is:`,
    code,
    `It is valid for ${formatCount(minutesUntil(expiresAt, now), 'minute')}, until ${isoUtc(expiresAt)}. Send it with a new password to set it.`,
    'Your password is unchanged. If it was not you, ignore this message.',
  ]);
}

export function passwordResetMail(to: string, name: string, resetAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('password-reset', 'Your password was reset', [
    `Hello ${name},`,
    `the password of your account was reset with an e-mailed code at ${isoUtc(resetAt)} from the address ${clientAddress}.`,
    'All sessions have been signed out.',
    'If you did not do this, someone can read your e-mail: secure your mailbox, then reset the password again.',
  ]) };
}

export function accountDeletedMail(to: string, name: string, deletedAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('account-deleted', 'Your account was deleted', [
    `Hello ${name},`,
    `your account was deleted at ${isoUtc(deletedAt)} from the address ${clientAddress}, with everything it held.`,
    'Its name and this address are free again. This message is the last we keep of it, and it is erased once sent.',
    'If you did not do this, someone knew your password: secure this mailbox and your other accounts.',
  ]) };
}

export function totpEnabledMail(to: string, name: string, enabledAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('totp-enabled', 'A second factor was enabled', [
    `Hello ${name},`,
    `a second factor (an authenticator app) was enabled for your account at ${isoUtc(enabledAt)} from the address ${clientAddress}. Signing in now needs a code from the app, or one of the recovery codes shown once when it was enabled.`,
    'Keep the recovery codes somewhere safe: a password reset by e-mail does not remove the second factor.',
    'If you did not do this, someone knows your password: reset it at once.',
  ]) };
}

export function totpDisabledMail(to: string, name: string, disabledAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('totp-disabled', 'The second factor was disabled', [
    `Hello ${name},`,
    `the second factor of your account was disabled at ${isoUtc(disabledAt)} from the address ${clientAddress}. Its recovery codes no longer work, and signing in needs only the password.`,
    'If you did not do this, someone knows your password and has your codes: reset the password at once.',
  ]) };
}

/** A recovery code was used; `left` is how many remain, and the mail says so plainly when few do. */
export function recoveryCodeUsedMail(to: string, name: string, usedAt: Date, clientAddress: string, left: number): OutgoingMail {
  const few = left <= fewRecoveryCodesLeft
    ? [`Only ${formatCount(left, 'recovery code')} ${left === 1 ? 'is' : 'are'} left. Disable the second factor and enable it again to get ten new ones.`]
    : [];
  return { to, ...compose('recovery-code-used', 'A recovery code was used', [
    `Hello ${name},`,
    `one of the recovery codes of your account was used at ${isoUtc(usedAt)} from the address ${clientAddress}; it no longer works. ${formatCount(left, 'code')} left.`,
    ...few,
    'If you did not do this, someone has your password and your recovery codes: reset the password and disable the second factor at once.',
  ]) };
}

/** Whole minutes left, at least one, rounded down so that the mail never promises more than is left. */
function minutesUntil(expiresAt: Date, now: Date): number {
  return Math.max(1, Math.floor((expiresAt.getTime() - now.getTime()) / 60_000));
}

/** ISO 8601 in UTC without fractions, such as 2026-11-21T10:30:00Z. */
export function isoUtc(date: Date): string {
  // toISOString always ends in `.sssZ`; cutting it off costs a tenth of a regex replace.
  return `${date.toISOString().slice(0, -5)}Z`;
}

function compose(kind: MailKind, subject: string, paragraphs: string[]): UnaddressedMail {
  const html = `<!doctype html><html><body>${paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`).join('')}</body></html>`;
  return { kind, content: { subject, text: `${paragraphs.join('\n\n')}\n`, html } };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

import { fewRecoveryCodesLeft } from '../accounts/recovery-codes.ts';
import { formatCount, isoUtc } from '../format.ts';

/** What the outbox stores and the transport sends; never logged, as it may hold a code. */
export type MailContent = { subject: string; text: string; html: string };
export type MailKind =
  | 'registration-code'
  | 'account-active'
  | 'password-changed'
  | 'registration-attempt'
  | 'reset-code'
  | 'reset-forced'
  | 'password-reset'
  | 'account-deleted'
  | 'email-change-code'
  | 'email-change-requested'
  | 'email-change-attempt'
  | 'email-changed'
  | 'totp-code'
  | 'totp-enabled'
  | 'totp-disabled'
  | 'recovery-code-used'
  | 'passkey-code'
  | 'passkey-added'
  | 'passkey-removed';
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

/** An operator's forced reset (use-cases/operator-actions.ts): the password no longer works, and this code sets a new one. */
export function resetForcedMail(code: string, expiresAt: Date, now: Date): UnaddressedMail {
  return compose('reset-forced', 'Set a new password for your account', [
    'Hello,',
    `at ${isoUtc(now)} our operators signed your account out everywhere and cancelled its password, to protect it. The code to set a new one is:`,
    code,
    `It is valid for ${formatCount(minutesUntil(expiresAt, now), 'minute')}, until ${isoUtc(expiresAt)}. Send it with a new password to set it.`,
    'When it expires, ask for a new code with the password reset form.',
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

/** The code that enabling a second factor needs: a factor survives a reset, so only the mailbox's owner may add one. */
export function totpCodeMail(
  to: string, name: string, code: string, expiresAt: Date, now: Date, clientAddress: string,
): OutgoingMail {
  return { to, ...compose('totp-code', 'Your code to enable a second factor', [
    `Hello ${name},`,
    `someone signed in to your account with its password asked, from the address ${clientAddress}, ` +
      'to enable a second factor (an authenticator app). This code allows it:',
    code,
    `It is valid for ${formatCount(minutesUntil(expiresAt, now), 'minute')}, until ${isoUtc(expiresAt)}.`,
    'If you did not ask for this, someone knows your password: do not pass the code on, ' +
      'and reset the password, which ends their sessions.',
  ]) };
}

export function totpEnabledMail(to: string, name: string, enabledAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('totp-enabled', 'A second factor was enabled', [
    `Hello ${name},`,
    `a second factor (an authenticator app) was enabled for your account at ${isoUtc(enabledAt)} ` +
      `from the address ${clientAddress}, with the code mailed to this address. Signing in now needs a code ` +
      'from the app, or one of the recovery codes shown once when it was enabled. Every other session was signed out.',
    'Keep the recovery codes somewhere safe: a password reset by e-mail does not remove the second factor.',
    'If you did not do this, someone has your password and can read this mailbox: secure the mailbox first, ' +
      'then reset the password. Removing a factor you do not hold needs the operator of this service: contact them.',
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
    'If you did not do this, someone has your password and your recovery codes: reset the password at once, ' +
      'then disable the second factor and enable it again, which replaces the codes.',
  ]) };
}


/** The code that confirms a new address, mailed to that address. */
export function emailChangeCodeMail(to: string, name: string, code: string, expiresAt: Date, now: Date): OutgoingMail {
  return { to, ...compose('email-change-code', 'Confirm your new e-mail address', [
    'Hello,',
    `the account "${name}" asked to use this address from now on. This code confirms it:`,
    code,
    `It is valid for ${formatCount(minutesUntil(expiresAt, now), 'minute')}, until ${isoUtc(expiresAt)}. Send it to confirm the change (POST /acc/email).`,
    'If you did not ask for this, ignore this message: without the code nothing changes.',
  ]) };
}

/** The code that adding a passkey needs: a passkey survives a password reset, so only the mailbox's owner may add one. */
export function passkeyCodeMail(to: string, name: string, code: string, expiresAt: Date, now: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('passkey-code', 'Your code to add a passkey', [
    `Hello ${name},`,
    `someone signed in to your account with its password asked, from the address ${clientAddress}, to add a passkey. This code allows it:`,
    code,
    `It is valid for ${formatCount(minutesUntil(expiresAt, now), 'minute')}, until ${isoUtc(expiresAt)}.`,
    'If you did not ask for this, someone knows your password: do not pass the code on, and change the password.',
  ]) };
}

export function passkeyAddedMail(to: string, name: string, passkeyName: string, at: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('passkey-added', 'A passkey was added', [
    `Hello ${name},`,
    `the passkey "${passkeyName}" was added to your account at ${isoUtc(at)} from the address ${clientAddress}. It signs in without the password, and a password reset does not remove it.`,
    'If you did not do this, remove it (DELETE /acc/me/passkeys/{id}) and change your password.',
  ]) };
}

export function passkeyRemovedMail(to: string, name: string, passkeyName: string, at: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('passkey-removed', 'A passkey was removed', [
    `Hello ${name},`,
    `the passkey "${passkeyName}" was removed from your account at ${isoUtc(at)} from the address ${clientAddress}; it no longer signs in.`,
    'If you did not do this, someone knows your password: reset it at once.',
  ]) };
}

/**
 * To the current address, when a change is asked for. It reads the same whether or not the new
 * address could take the change: the owner reads this mailbox, and must not learn from it
 * whether another account holds the new address.
 */
export function emailChangeRequestedMail(to: string, name: string, newEmail: string, askedAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('email-change-requested', 'A change of your e-mail address was asked for', [
    `Hello ${name},`,
    `at ${isoUtc(askedAt)}, from the address ${clientAddress}, a session of your account asked to change its e-mail address to ${maskAddress(newEmail)}.`,
    'Nothing changes until the change is confirmed from the new mailbox; until then this address stays the account\'s.',
    'If it was not you, someone knows your password and is signed in: sign out everywhere (DELETE /acc/me/sessions) or change your password. Either cancels the change.',
  ]) };
}

/** To the holder of an address that someone asked to move another account to. Nothing was sent there but this. */
export function emailChangeAttemptMail(to: string, name: string, pending: boolean): OutgoingMail {
  const holds = pending ? `a registration of the account "${name}" that waits for its code` : `your account "${name}"`;
  return { to, ...compose('email-change-attempt', 'Someone tried to use your address', [
    'Hello,',
    `someone asked to change the e-mail address of another account to this address, which already belongs to ${holds}.`,
    'Nothing was changed, and no code was sent. If it was not you, you can ignore this message.',
  ]) };
}

/** To the old address, once the change is confirmed: the last message this address gets about the account. */
export function emailChangedMail(to: string, name: string, newEmail: string, changedAt: Date, clientAddress: string): OutgoingMail {
  return { to, ...compose('email-changed', 'Your e-mail address was changed', [
    `Hello ${name},`,
    `the e-mail address of your account was changed to ${maskAddress(newEmail)} at ${isoUtc(changedAt)}, confirmed from the address ${clientAddress} with a code sent to the new address.`,
    'This address no longer belongs to the account: signing in and resetting the password with it no longer work. Every session except the one that asked for the change has been signed out.',
    'If you did not do this, someone knew your password: contact support, and secure your other accounts.',
  ]) };
}

/**
 * An address shown in part, such as j***@e***.com: enough for the owner to recognise it, too
 * little for anyone else who reads the mail to write to it.
 */
export function maskAddress(email: string): string {
  const at = email.lastIndexOf('@');
  const domain = email.slice(at + 1);
  const lastDot = domain.lastIndexOf('.');
  const suffix = domain.startsWith('[') || lastDot <= 0 ? '' : domain.slice(lastDot);
  return `${email[0]}***@${domain[0]}***${suffix}`;
}

/** Whole minutes left, at least one, rounded down so that the mail never promises more than is left. */
function minutesUntil(expiresAt: Date, now: Date): number {
  return Math.max(1, Math.floor((expiresAt.getTime() - now.getTime()) / 60_000));
}

function compose(kind: MailKind, subject: string, paragraphs: string[]): UnaddressedMail {
  const html = `<!doctype html><html><body>${paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`).join('')}</body></html>`;
  return { kind, content: { subject, text: `${paragraphs.join('\n\n')}\n`, html } };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

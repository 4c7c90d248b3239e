import { isoUtc } from '../support/format.ts';

/** At or below this many unused codes, the notice of a used code says to make new ones. */
export const fewRecoveryCodesLeft = 3;

/** What the outbox stores and the transport sends; never logged, as it may hold a code. */
export type MailContent = { subject: string; text: string; html: string };
/**
 * A message before it is written: its kind, the locale of its reader (null: MAIL_DEFAULT_LOCALE),
 * and the values of its placeholders. templates.ts renders it when it is queued.
 */
export type UnaddressedMail = { kind: MailKind; locale: string | null; values: Record<string, string> };
export type OutgoingMail = UnaddressedMail & { to: string };
/** Whom a message is about and goes to: an account, a pending registration, or the holder of an address. */
export type Recipient = { email: string; name: string; locale: string | null };

/** A template as the operator writes it and the built-in texts are: a subject, and a body of paragraphs. */
export type Template = { subject: string; body: string };
/** Every kind's placeholders (besides `commonPlaceholders`), those it `requires`, and its built-in English text. */
export type KindSpec = { placeholders: string[]; required: string[]; builtIn: Template };

/** Placeholders every kind has: the settings PRODUCT_NAME, SUPPORT_CONTACT and APP_URL, empty when unset. */
export const commonPlaceholders = ['product_name', 'support', 'app_url'];
const codes = 'code! code_link expires_at valid_minutes';
const codeHint = 'It is valid for {{valid_minutes}} min, until {{expires_at}}.';
const link = '{{#code_link}}Or open this link: {{code_link}}{{/code_link}}';
const support = 'contact support{{#support}} ({{support}}){{/support}}';
const footer = '{{#product_name}}{{product_name}}{{#app_url}}: {{app_url}}{{/app_url}}{{/product_name}}';

function spec(placeholders: string, subject: string, paragraphs: string[]): KindSpec {
  const names = placeholders.split(' ');
  const required = names.filter((name) => name.endsWith('!')).map((name) => name.slice(0, -1));
  const body = [...paragraphs, footer].join('\n\n');
  return { placeholders: names.map((name) => name.replace(/!$/, '')), required, builtIn: { subject, body } };
}

/**
 * The kinds of mail, in the order the README's table lists them. A `!` marks a required
 * placeholder: a template without it is refused at start-up (templates.ts). `{{#x}}…{{/x}}`
 * shows its text only when x is not empty, `{{^x}}…{{/x}}` only when it is.
 */
export const mailKinds = {
  'registration-code': spec(`name ${codes} repeat`, 'Your registration code', [
    'Hello,',
    'this code activates the account "{{name}}" with this address:',
    '{{code}}',
    `${codeHint} Send it to activate the account.`,
    link,
    '{{#repeat}}This address already had a registration waiting. The code activates that registration as it was ' +
      'first asked for: the account "{{name}}" with the password chosen then, whatever a later request said. If ' +
      'you did not ask for "{{name}}" yourself, do not use the code; after {{expires_at}} the address is free for ' +
      'a registration of your own.{{/repeat}}',
    'If you did not ask to register "{{name}}", ignore this message: without the code no account is created.',
  ]),
  'account-active': spec('name', 'Your account is active', [
    'Hello {{name}},',
    'your account is now active. You can sign in with your name or this address and your password.',
  ]),
  'password-changed': spec('name time client_address', 'Your password was changed', [
    'Hello {{name}},',
    'the password of your account was changed at {{time}} from the address {{client_address}}.',
    'All sessions signed in before the change have been signed out.',
    `If you did not change it, your account may be compromised: ${support} at once.`,
  ]),
  'registration-attempt': spec('name', 'Someone tried to register with your address', [
    'Hello {{name}},',
    'someone asked to register a new account with this address, which already belongs to your account.',
    'Nothing was changed. If it was you, sign in with your existing account instead.',
    'If you forgot your password, ask for a reset code with this address (POST /acc/pwd/code) and set a new one.',
    'If it was not you, you can ignore this message.',
  ]),
  // No account name: the code is issued before anything about the account is read.
  'reset-code': spec(`${codes} time client_address`, 'Your password reset code', [
    'Hello,',
    'someone asked at {{time}}, from the address {{client_address}}, to reset the password of the account with ' +
      'this address. The code is:',
    '{{code}}',
    `${codeHint} Send it with a new password to set it.`,
    link,
    'Your password is unchanged. If it was not you, ignore this message.',
  ]),
  // An operator's forced reset (features/operators/actions.ts): the password no longer works; this code sets a new one.
  'reset-forced': spec(`${codes} time`, 'Set a new password for your account', [
    'Hello,',
    'at {{time}} our operators signed your account out everywhere and cancelled its password, to protect it. The ' +
      'code to set a new one is:',
    '{{code}}',
    `${codeHint} Send it with a new password to set it.`,
    link,
    'When it expires, ask for a new code with the password reset form.',
  ]),
  'password-reset': spec('name time client_address', 'Your password was reset', [
    'Hello {{name}},',
    'the password of your account was reset with an e-mailed code at {{time}} from the address {{client_address}}.',
    'All sessions have been signed out.',
    'A reset leaves the passkeys of the account in place: look at them (GET /acc/me/passkeys) and remove any you ' +
      'do not know; removing one also signs out every other session.',
    'If you did not do this, someone can read your e-mail: secure your mailbox, then reset the password again.',
  ]),
  // `by_operator`: an operator deleted it (admin delete), an act of ours and not of an address.
  'account-deleted': spec('name time client_address by_operator name_held_days', 'Your account was deleted', [
    'Hello {{name}},',
    'your account was deleted at {{time}} {{#by_operator}}by our operators{{/by_operator}}' +
      '{{^by_operator}}from the address {{client_address}}{{/by_operator}}, with everything it held.',
    '{{#name_held_days}}For {{name_held_days}} days only this address may register the name {{name}} again; ' +
      'for that we keep the name and a keyed hash of this address, nothing else. {{/name_held_days}}' +
      'This message is the last we keep of the account, and it is erased once sent.',
    `{{#by_operator}}If you did not ask for this, ${support}.{{/by_operator}}{{^by_operator}}If you did not do this, ` +
      'someone knew your password: secure this mailbox and your other accounts.{{/by_operator}}',
  ]),
  // The code that confirms a new address, mailed to that address.
  'email-change-code': spec(`name ${codes}`, 'Confirm your new e-mail address', [
    'Hello,',
    'the account "{{name}}" asked to use this address from now on. This code confirms it:',
    '{{code}}',
    `${codeHint} Send it to confirm the change (POST /acc/email).`,
    link,
    'If you did not ask for this, ignore this message: without the code nothing changes.',
  ]),
  // To the current address. It reads the same whether or not the new address could take the
  // change: the owner must not learn from it whether another account holds the new address.
  'email-change-requested': spec(
    `name new_email_masked! ${codes} time client_address`, 'A change of your e-mail address was asked for', [
    'Hello {{name}},',
    'at {{time}}, from the address {{client_address}}, a session of your account asked to change its e-mail ' +
      'address to {{new_email_masked}}. If it was you, this code confirms the change from this mailbox, ' +
      'together with the one mailed to the new address (POST /acc/email, as current_code):',
    '{{code}}',
    codeHint,
    link,
    "Nothing changes without it; until then this address stays the account's.",
    'If it was not you, someone knows your password and is signed in: do not pass the code on, and sign out ' +
      'everywhere (DELETE /acc/me/sessions) or change your password. Either cancels the change.',
  ]),
  // To the holder of an address that someone asked to move another account to. Nothing was sent there but this.
  'email-change-attempt': spec('name pending', 'Someone tried to use your address', [
    'Hello,',
    'someone asked to change the e-mail address of another account to this address, which already belongs to ' +
      '{{#pending}}a registration of the account "{{name}}" that waits for its code{{/pending}}{{^pending}}your ' +
      'account "{{name}}"{{/pending}}.',
    'Nothing was changed, and no code was sent. If it was not you, you can ignore this message.',
  ]),
  // To the old address, once the change is confirmed: the last message this address gets about the account.
  'email-changed': spec('name new_email_masked! time client_address', 'Your e-mail address was changed', [
    'Hello {{name}},',
    'the e-mail address of your account was changed to {{new_email_masked}} at {{time}}, confirmed from the ' +
      'address {{client_address}} with a code sent to the new address.',
    'This address no longer belongs to the account: signing in and resetting the password with it no longer ' +
      'work. Every session except the one that asked for the change has been signed out.',
    `If you did not do this, someone knew your password: ${support}, and secure your other accounts.`,
  ]),
  // The code that enabling a second factor needs: a factor survives a reset, so only the mailbox's owner may add one.
  'totp-code': spec(`name ${codes} client_address`, 'Your code to enable a second factor', [
    'Hello {{name}},',
    'someone who is signed in to your account, and who gave its password, asked from the address ' +
      '{{client_address}} to enable a second factor (an authenticator app). This code allows it:',
    '{{code}}',
    codeHint,
    link,
    'If you did not ask for this, someone knows your password: do not pass the code on, ' +
      'and reset the password, which ends their sessions.',
  ]),
  'totp-enabled': spec('name time client_address', 'A second factor was enabled', [
    'Hello {{name}},',
    'a second factor (an authenticator app) was enabled for your account at {{time}} ' +
      'from the address {{client_address}}, with the code mailed to this address. Signing in now needs a code ' +
      'from the app, or one of the recovery codes shown once when it was enabled. Every other session was signed out.',
    'Keep the recovery codes somewhere safe: a password reset by e-mail does not remove the second factor.',
    `If you did not do this, someone has your password and can read this mailbox: secure the mailbox first, ` +
      'then reset the password. Removing a factor you do not hold needs the operator of this service: ' +
      'contact them{{#support}} ({{support}}){{/support}}.',
  ]),
  'totp-disabled': spec('name time client_address', 'The second factor was disabled', [
    'Hello {{name}},',
    'the second factor of your account was disabled at {{time}} from the address {{client_address}}. Its ' +
      'recovery codes no longer work, and signing in needs only the password.',
    'If you did not do this, someone knows your password and has your codes: reset the password at once.',
  ]),
  'recovery-code-used': spec('name time client_address codes_left few_left', 'A recovery code was used', [
    'Hello {{name}},',
    'one of the recovery codes of your account was used at {{time}} from the address {{client_address}}; it no ' +
      'longer works. Recovery codes left: {{codes_left}}.',
    '{{#few_left}}Only {{codes_left}} left. Disable the second factor and enable it again to get ten new ' +
      'ones.{{/few_left}}',
    'If you did not do this, someone has your password and your recovery codes: reset the password at once, ' +
      'then disable the second factor and enable it again, which replaces the codes.',
  ]),
  // A passkey survives a password reset, so only the mailbox's owner may add one.
  'passkey-code': spec(`name ${codes} client_address`, 'Your code to add a passkey', [
    'Hello {{name}},',
    'someone who is signed in to your account, and who gave its password, asked from the address ' +
      '{{client_address}} to add a passkey. This code allows it:',
    '{{code}}',
    codeHint,
    link,
    'If you did not ask for this, someone knows your password: do not pass the code on, and change the password.',
  ]),
  // Deleting the account cannot be undone by a reset, so only the mailbox's owner may do it.
  'deletion-code': spec(`name ${codes} client_address`, 'Your code to delete your account', [
    'Hello {{name}},',
    'someone who is signed in to your account, and who gave its password, asked from the address ' +
      '{{client_address}} to delete the account for good. This code allows it:',
    '{{code}}',
    codeHint,
    link,
    'If you did not ask for this, someone knows your password: do not pass the code on, and reset the password, ' +
      'which ends their sessions.',
  ]),
  'passkey-added': spec('name passkey_name time client_address', 'A passkey was added', [
    'Hello {{name}},',
    'the passkey "{{passkey_name}}" was added to your account at {{time}} from the address {{client_address}}. ' +
      'It signs in without the password, and a password reset does not remove it.',
    'If you did not do this, remove it (DELETE /acc/me/passkeys/{id}) and change your password.',
  ]),
  'passkey-removed': spec('name passkey_name time client_address', 'A passkey was removed', [
    'Hello {{name}},',
    'the passkey "{{passkey_name}}" was removed from your account at {{time}} from the address ' +
      '{{client_address}}; it no longer signs in.',
    'If you did not do this, someone knows your password: reset it at once.',
  ]),
} satisfies Record<string, KindSpec>;
export type MailKind = keyof typeof mailKinds;

function mail(kind: MailKind, to: Recipient, values: Record<string, string>): OutgoingMail {
  return { kind, to: to.email, locale: to.locale, values: { name: to.name, ...values } };
}

/** The values of a code mail; `code_link` is filled in by templates.ts, which knows APP_URL. */
function codeValues(code: string, expiresAt: Date, now: Date): Record<string, string> {
  return { code, expires_at: isoUtc(expiresAt), valid_minutes: String(minutesUntil(expiresAt, now)) };
}

/**
 * The code of a pending registration; it names the account the code activates, which a later
 * request never changes. `repeat`: the address already had this registration waiting, so the
 * mail warns that the code activates what the first request asked for.
 */
export function registrationCodeMail(
  to: Recipient, code: string, expiresAt: Date, now: Date, repeat = false,
): OutgoingMail {
  return mail('registration-code', to, { ...codeValues(code, expiresAt, now), repeat: repeat ? 'yes' : '' });
}

export function accountActiveMail(to: Recipient): OutgoingMail {
  return mail('account-active', to, {});
}

/** A notice of something done to the account at `at` from `clientAddress`. */
export function noticeMail(
  kind: 'password-changed' | 'password-reset' | 'totp-enabled' | 'totp-disabled',
  to: Recipient,
  at: Date,
  clientAddress: string,
): OutgoingMail {
  return mail(kind, to, { time: isoUtc(at), client_address: clientAddress });
}

/** The account was deleted at `at`, from `clientAddress` by its owner, or (null) by our operators. */
export function accountDeletedMail(
  to: Recipient, at: Date, clientAddress: string | null, nameHeldDays: number,
): OutgoingMail {
  const byOperator = clientAddress === null ? 'yes' : '';
  const held = nameHeldDays > 0 ? String(nameHeldDays) : '';
  const values = {
    time: isoUtc(at), client_address: clientAddress ?? '', by_operator: byOperator, name_held_days: held,
  };
  return mail('account-deleted', to, values);
}

export function registrationAttemptMail(to: Recipient): OutgoingMail {
  return mail('registration-attempt', to, {});
}

export function resetCodeMail(
  code: string, expiresAt: Date, now: Date, clientAddress: string, locale: string | null,
): UnaddressedMail {
  const values = { ...codeValues(code, expiresAt, now), time: isoUtc(now), client_address: clientAddress };
  return { kind: 'reset-code', locale, values };
}

export function resetForcedMail(code: string, expiresAt: Date, now: Date, locale: string | null): UnaddressedMail {
  return { kind: 'reset-forced', locale, values: { ...codeValues(code, expiresAt, now), time: isoUtc(now) } };
}

/** A recovery code was used; `left` is how many remain, and the mail says so plainly when few do. */
export function recoveryCodeUsedMail(to: Recipient, usedAt: Date, clientAddress: string, left: number): OutgoingMail {
  const few = left <= fewRecoveryCodesLeft ? 'yes' : '';
  const values = { time: isoUtc(usedAt), client_address: clientAddress, codes_left: String(left), few_left: few };
  return mail('recovery-code-used', to, values);
}

/** To the new address, which holds no account: in the request's locale (`to.locale`), with the account's name. */
export function emailChangeCodeMail(to: Recipient, code: string, expiresAt: Date, now: Date): OutgoingMail {
  return mail('email-change-code', to, codeValues(code, expiresAt, now));
}

/** The code that enabling a second factor needs (features/second-factor/factor.ts). */
export function totpCodeMail(
  to: Recipient, code: string, expiresAt: Date, now: Date, clientAddress: string,
): OutgoingMail {
  return mail('totp-code', to, { ...codeValues(code, expiresAt, now), client_address: clientAddress });
}

export function passkeyCodeMail(
  to: Recipient, code: string, expiresAt: Date, now: Date, clientAddress: string,
): OutgoingMail {
  return mail('passkey-code', to, { ...codeValues(code, expiresAt, now), client_address: clientAddress });
}

/** The code that deleting the account needs (features/account/delete.ts). */
export function deletionCodeMail(
  to: Recipient, code: string, expiresAt: Date, now: Date, clientAddress: string,
): OutgoingMail {
  return mail('deletion-code', to, { ...codeValues(code, expiresAt, now), client_address: clientAddress });
}

export function passkeyMail(
  kind: 'passkey-added' | 'passkey-removed', to: Recipient, passkeyName: string, at: Date, clientAddress: string,
): OutgoingMail {
  return mail(kind, to, { passkey_name: passkeyName, time: isoUtc(at), client_address: clientAddress });
}

/** To the current address when a change is asked for, with the code that confirms it from there. */
export function emailChangeRequestedMail(
  to: Recipient, newEmail: string, code: string, expiresAt: Date, at: Date, clientAddress: string,
): OutgoingMail {
  const values = { new_email_masked: maskAddress(newEmail), time: isoUtc(at), client_address: clientAddress };
  return mail('email-change-requested', to, { ...codeValues(code, expiresAt, at), ...values });
}

/** To the current address once a change is confirmed. */
export function emailChangedMail(to: Recipient, newEmail: string, at: Date, clientAddress: string): OutgoingMail {
  const values = { new_email_masked: maskAddress(newEmail), time: isoUtc(at), client_address: clientAddress };
  return mail('email-changed', to, values);
}

export function emailChangeAttemptMail(to: Recipient, pending: boolean): OutgoingMail {
  return mail('email-change-attempt', to, { pending: pending ? 'yes' : '' });
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

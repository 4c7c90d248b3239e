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

/** A template as the operator writes it and the built-in texts are (templates/KIND.en.txt): a subject, and a body. */
export type Template = { subject: string; body: string };
/** Every kind's placeholders (besides `commonPlaceholders`), and those it `requires`. */
export type KindSpec = { placeholders: string[]; required: string[] };

/** Placeholders every kind has: the settings PRODUCT_NAME, SUPPORT_CONTACT and APP_URL, empty when unset. */
export const commonPlaceholders = ['product_name', 'support', 'app_url'];

function spec(placeholders: string): KindSpec {
  const names = placeholders.split(' ');
  const required = names.filter((name) => name.endsWith('!')).map((name) => name.slice(0, -1));
  return { placeholders: names.map((name) => name.replace(/!$/, '')), required };
}

/**
 * The kinds of mail, in the order docs/configuration.md's table lists them, with their placeholders; a `!`
 * marks a required one, which a template must show (templates.ts refuses one without it at
 * start-up). The built-in English texts are template files, templates/KIND.en.txt, in the format
 * operators write theirs in.
 */
export const mailKinds = {
  'registration-code': spec('name code! code_link expires_at valid_minutes repeat'),
  'account-active': spec('name provider'),
  'password-changed': spec('name time client_address'),
  'registration-attempt': spec('name'),
  'reset-code': spec('code! code_link expires_at valid_minutes time client_address'),
  'reset-forced': spec('code! code_link expires_at valid_minutes time'),
  'password-reset': spec('name time client_address'),
  'account-deleted': spec('name time client_address by_operator name_held_days'),
  'email-change-code': spec('name code! code_link expires_at valid_minutes'),
  'email-change-requested': spec('name new_email_masked! code! code_link expires_at valid_minutes time client_address'),
  'email-change-attempt': spec('name pending'),
  'email-changed': spec('name new_email_masked! time client_address'),
  'totp-code': spec('name code! code_link expires_at valid_minutes client_address'),
  'totp-enabled': spec('name time client_address'),
  'totp-disabled': spec('name time client_address'),
  'recovery-code-used': spec('name time client_address codes_left few_left'),
  'passkey-code': spec('name code! code_link expires_at valid_minutes client_address'),
  'deletion-code': spec('name code! code_link expires_at valid_minutes client_address'),
  'passkey-added': spec('name passkey_name time client_address'),
  'passkey-removed': spec('name passkey_name time client_address'),
  'identity-code': spec('name provider code! code_link expires_at valid_minutes client_address'),
  'identity-linked': spec('name provider time client_address'),
  'identity-removed': spec('name provider time client_address'),
  'identity-unknown': spec('name provider time'),
  'data-exported': spec('name time client_address'),
  'new-sign-in': spec('name time client_address client way new_pair'),
  'notices-off': spec('name time client_address'),
  'sign-in-code': spec('code! code_link expires_at valid_minutes time client_address'),
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

/** `provider`: the account was made from an identity there, and has no password until a reset sets one. */
export function accountActiveMail(to: Recipient, provider = ''): OutgoingMail {
  return mail('account-active', to, { provider });
}

/** A notice of something done to the account at `at` from `clientAddress`; `extra`: the kind's own values. */
export function noticeMail(
  kind: 'password-changed' | 'password-reset' | 'totp-enabled' | 'totp-disabled' | 'passkey-added' | 'passkey-removed'
    | 'identity-linked' | 'identity-removed' | 'data-exported' | 'new-sign-in' | 'notices-off',
  to: Recipient, at: Date, clientAddress: string, extra: Record<string, string> = {},
): OutgoingMail {
  return mail(kind, to, { ...extra, time: isoUtc(at), client_address: clientAddress });
}

/** A code that an act of the signed-in account needs, asked for from `clientAddress` (core/proofs.ts). */
export function actCodeMail(
  kind: 'totp-code' | 'passkey-code' | 'deletion-code' | 'identity-code', to: Recipient, code: string,
  expiresAt: Date, now: Date, clientAddress: string, extra: Record<string, string> = {},
): OutgoingMail {
  return mail(kind, to, { ...extra, ...codeValues(code, expiresAt, now), client_address: clientAddress });
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

/** A sign-in code (features/email-code) asked for at `now` from `clientAddress`; the issuing statement addresses it. */
export function signInCodeMail(
  code: string, expiresAt: Date, now: Date, clientAddress: string, locale: string | null,
): UnaddressedMail {
  const values = { ...codeValues(code, expiresAt, now), time: isoUtc(now), client_address: clientAddress };
  return { kind: 'sign-in-code', locale, values };
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

/** Someone signed in at a provider with the account's address, and no account is linked to that identity. */
export function identityUnknownMail(to: Recipient, provider: string, at: Date): OutgoingMail {
  return mail('identity-unknown', to, { provider, time: isoUtc(at) });
}

import { canonicalLocale } from '../config/locales.ts';
import { mailKinds, type MailKind } from './messages.ts';
import type { MailRenderer } from './templates.ts';

export const mailUsage = `  mail preview KIND [--locale L]
                            print a message of KIND as MAIL_TEMPLATES_DIR and the settings
                            write it, with sample values (admin mail preview too)
`;

/** A value for every placeholder (templates.ts adds the settings'), so that a preview shows each. */
const samples: Record<string, string> = {
  name: 'alice', code: 'ABCD-EFGH-JKLM-NPQR', expires_at: '2030-01-01T12:30:00Z', valid_minutes: '30',
  time: '2030-01-01T12:00:00Z', client_address: '192.0.2.7', new_email_masked: 'n***@e***.org', passkey_name: 'Laptop',
  codes_left: '2', few_left: 'yes', repeat: '', pending: '',
};

/** `mail preview KIND [--locale L]`: prints the subject, the text and the HTML; returns the exit code. */
export function runMailCommand(
  args: string[], renderer: MailRenderer, print: (line: string) => void, fail: (line: string) => void,
): number {
  const [verb, kind = '', flag, locale = null] = args;
  const wellFormed = args.length === 2 || (args.length === 4 && flag === '--locale');
  if (verb !== 'preview' || !Object.hasOwn(mailKinds, kind) || !wellFormed) {
    fail(`usage: mail preview KIND [--locale L], KIND one of ${Object.keys(mailKinds).join(', ')}`);
    return 2;
  }
  const canonical = locale === null ? null : canonicalLocale(locale);
  if (locale !== null && canonical === null) {
    fail(`--locale must be a locale such as de, de-AT or pt-BR, got ${JSON.stringify(locale)}`);
    return 2;
  }
  const content = renderer.render({ kind: kind as MailKind, locale: canonical, values: samples });
  // Said on stderr, so that the message itself stays alone on stdout.
  const chosen = renderer.templateLocale(kind as MailKind, canonical);
  if (chosen === null) fail(`no template of ${kind} in MAIL_TEMPLATES_DIR fits: this is the built-in English text`);
  else if (canonical !== null && chosen !== canonical) {
    fail(`no ${kind} template for ${canonical}: this is the ${chosen} one`);
  }
  print(`Subject: ${content.subject}\n\n${content.text}\n--- HTML\n${content.html}`);
  return 0;
}

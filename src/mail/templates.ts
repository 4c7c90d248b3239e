import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config/config.ts';
import { canonicalLocale, localeChain } from '../config/locales.ts';
import type { Sealer } from '../core/sealing.ts';
import {
  commonPlaceholders, mailKinds, type KindSpec, type MailContent, type MailKind, type Template, type UnaddressedMail,
} from './messages.ts';

/** The settings that mail names (PRODUCT_NAME, SUPPORT_CONTACT, APP_URL), and the locale of a reader who chose none. */
export type MailSettings = {
  productName: string | null; supportContact: string | null; appUrl: string | null; mailDefaultLocale: string | null;
};
const noSettings: MailSettings = { productName: null, supportContact: null, appUrl: null, mailDefaultLocale: null };
/** The operator's templates (MAIL_TEMPLATES_DIR), by `kind.locale`: the text, and optionally HTML. */
export type MailTemplates = Map<string, { text: Template; html: Template | null }>;
/** Writes a message in its reader's locale; `locales`: those the templates have, English included. */
export type MailRenderer = {
  locales: readonly string[];
  render(mail: UnaddressedMail): MailContent;
  /** The locale of the operator's template that a `kind` message to `locale` is in; null: the built-in text. */
  templateLocale(kind: MailKind, locale: string | null): string | null;
};
/** What queues mail: it is written, then sealed for the outbox (outbox.ts). */
export type Mailer = MailRenderer & { sealer: Sealer };

const fileName = /^([a-z-]+)\.([A-Za-z0-9-]+)\.(txt|html)$/;
const placeholder = /\{\{([#^/]?)([^{}]*)\}\}/g;
const section = /\{\{([#^])(\w+)\}\}([\s\S]*?)\{\{\/\2\}\}/g;

/**
 * Reads and checks every template in `dir` (null: none, the built-in English texts only). A
 * fault is refused in one line that names the file and what is wrong, never its content.
 */
export function loadMailTemplates(dir: string | null): MailTemplates {
  const found = new Map<string, { text?: Template; html?: Template }>();
  const names = dir === null ? [] : listFiles(dir);
  for (const name of names) {
    const [, kind = '', locale = '', type] = fileName.exec(name) ?? [];
    if (!Object.hasOwn(mailKinds, kind) || canonicalLocale(locale) !== locale) {
      const rule = "with a kind of docs/configuration.md's table and a locale such as de or pt-BR";
      refuse(name, `is not named kind.locale.txt or kind.locale.html, ${rule}`);
    }
    const key = `${kind}.${locale}`;
    const template = parseTemplate(name, readFileSync(join(dir!, name)), kind as MailKind);
    found.set(key, { ...found.get(key), [type === 'txt' ? 'text' : 'html']: template });
  }
  const templates: MailTemplates = new Map();
  for (const [key, { text, html }] of found) {
    if (text === undefined) refuse(`${key}.html`, `has no ${key}.txt beside it, which every HTML template needs`);
    templates.set(key, { text, html: html ?? null });
  }
  return templates;
}

/** The built-in English texts, templates/KIND.en.txt (shipped beside `src/` and `dist/`), checked as operators' are. */
const builtInDir = new URL('../../templates/', import.meta.url).pathname;
let builtIns: Map<MailKind, Template> | null = null;

function builtInTemplates(): Map<MailKind, Template> {
  builtIns ??= new Map(
    (Object.keys(mailKinds) as MailKind[]).map((kind) => {
      const file = `${kind}.en.txt`;
      return [kind, parseTemplate(file, readFileSync(join(builtInDir, file)), kind)];
    }),
  );
  return builtIns;
}

function listFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => !name.startsWith('.'));
  } catch (error) {
    throw new ConfigError(`MAIL_TEMPLATES_DIR ${dir} cannot be read (${(error as { code?: string }).code ?? 'error'})`);
  }
}

function parseTemplate(file: string, bytes: Buffer, kind: MailKind): Template {
  let source = '';
  try {
    source = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    refuse(file, 'is not valid UTF-8');
  }
  const [first = '', blank, ...body] = source.replaceAll('\r\n', '\n').split('\n');
  const subject = /^Subject:(.*)$/.exec(first)?.[1]?.trim() ?? '';
  if (subject === '' || blank !== '') {
    refuse(file, 'has no subject: its first line must be "Subject: …", then a blank line');
  }
  checkPlaceholders(file, `${subject}\n${body.join('\n')}`, kind, mailKinds[kind]);
  return { subject, body: body.join('\n') };
}

function checkPlaceholders(file: string, source: string, kind: MailKind, spec: KindSpec): void {
  const allowed = [...commonPlaceholders, ...spec.placeholders];
  for (const [, sign, name = ''] of source.matchAll(placeholder)) {
    if (!allowed.includes(name)) {
      refuse(file, `uses {{${sign}${name}}}, which ${kind} mail does not have (it has ${allowed.join(', ')})`);
    }
  }
  const unclosed = /\{\{[#^/]\w+\}\}/.exec(expandSections(source, () => true));
  if (unclosed !== null) refuse(file, `has ${unclosed[0]} without its pair`);
  // A required value must show whatever the sections decide.
  const missing = spec.required.find((name) => !expandSections(source, () => false).includes(`{{${name}}}`));
  if (missing !== undefined) refuse(file, `leaves out {{${missing}}}, which ${kind} mail requires`);
}

function refuse(file: string, reason: string): never {
  throw new ConfigError(`MAIL_TEMPLATES_DIR: ${file} ${reason}`);
}

/**
 * Writes each message in the first locale that has a template of its kind, out of its reader's
 * (and that locale's language), MAIL_DEFAULT_LOCALE's, then English; in the built-in English
 * text when none has.
 */
export function createMailRenderer(templates: MailTemplates = new Map(), settings?: MailSettings): MailRenderer {
  const builtIn = builtInTemplates();
  const { productName, supportContact, appUrl, mailDefaultLocale } = settings ?? noSettings;
  const locales = [...new Set(['en', ...[...templates.keys()].map((key) => key.split('.')[1]!)])];
  const templateLocale = (kind: MailKind, locale: string | null) => [
    ...localeChain(locale), ...localeChain(mailDefaultLocale), 'en',
  ].find((candidate) => templates.has(`${kind}.${candidate}`)) ?? null;
  return {
    locales,
    templateLocale,
    render({ kind, locale, values }) {
      const chosen = templateLocale(kind, locale);
      const own = chosen === null ? undefined : templates.get(`${kind}.${chosen}`);
      // The code goes in the fragment, which browsers never send: it reaches no server's log.
      const codeLink = appUrl !== null && values.code !== undefined ? `${appUrl}#kind=${kind}&code=${values.code}` : '';
      const settingValues = { product_name: productName ?? '', support: supportContact ?? '', app_url: appUrl ?? '' };
      const all = { ...values, code_link: codeLink, ...settingValues };
      const template = own?.text ?? builtIn.get(kind)!;
      const asIs = (value: string) => value;
      const text = fill(template.body, all, asIs).replace(/\n{3,}/g, '\n\n').trim();
      const html = own?.html ? fill(own.html.body, all, escapeHtml) : htmlOf(text);
      return { subject: fill(template.subject, all, inHeader), text: `${text}\n`, html };
    },
  };
}

/**
 * A value for a header, with a zero-width space inside each `=?`: no value can then be an RFC 2047
 * encoded word, which mail clients decode (a passkey name `=?utf-8?B?4oCu…?=` would show a
 * right-to-left override), and the space, not ASCII, has nodemailer encode the whole header.
 */
function inHeader(value: string): string {
  return value.replaceAll('=?', '=\u200b?');
}

/**
 * The template with its sections decided and its placeholders replaced, in one pass over the
 * template: a value is never read as a template, so a name that holds {{code}} stays text.
 */
function fill(template: string, values: Record<string, string>, escape: (value: string) => string): string {
  const shown = expandSections(template, (sign, name) => ((values[name] ?? '') !== '') === (sign === '#'));
  return shown.replace(placeholder, (_, _sign, name: string) => escape(values[name] ?? ''));
}

function expandSections(template: string, show: (sign: string, name: string) => boolean): string {
  return template.replace(section, (_, sign: string, name: string, inner: string) =>
    show(sign, name) ? expandSections(inner, show) : '');
}

/** The HTML part made from the text: a paragraph for each blank-line break, everything escaped. */
function htmlOf(text: string): string {
  const paragraphs = text.split('\n\n').map((paragraph) => `<p>${escapeHtml(paragraph).replaceAll('\n', '<br>')}</p>`);
  return `<!doctype html><html><body>${paragraphs.join('')}</body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

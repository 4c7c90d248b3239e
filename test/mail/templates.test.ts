import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { ConfigError } from '../../src/config/config.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { mailKinds, noticeMail, registrationCodeMail } from '../../src/mail/messages.ts';
import { createMailRenderer, loadMailTemplates, type MailSettings } from '../../src/mail/templates.ts';
import { createFileTransport } from '../../src/mail/transport.ts';
import { runMain } from '../helpers/process.ts';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A template directory holding `files` (name → content). */
async function templateDir(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mail-templates-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  return dir;
}

const settings: MailSettings = { productName: 'Acme', supportContact: 'help@acme.example', appUrl: 'https://app.acme.example/welcome', mailDefaultLocale: null };
const now = new Date('2030-01-01T12:00:00Z');
const inHalfAnHour = new Date(now.getTime() + 30 * 60_000);
const hostile = '<script>alert("x")</script> & \'quoted\'';

describe('loading templates: a fault refuses the start in one line naming the file and the fault', () => {
  const refusals: Array<[string, Record<string, string | Buffer>, RegExp]> = [
    ['a placeholder its kind does not have', { 'account-active.de.txt': 'Subject: Aktiv\n\nHallo {{name}}, {{code}}\n' },
      /^MAIL_TEMPLATES_DIR: account-active\.de\.txt uses \{\{code\}\}, which account-active mail does not have \(it has product_name, support, app_url, name, provider\)$/],
    ['a section its kind does not have', { 'account-active.de.txt': 'Subject: Aktiv\n\n{{#repeat}}x{{/repeat}}\n' }, /account-active\.de\.txt uses \{\{#repeat\}\}/],
    ['a required placeholder left out', { 'registration-code.de.txt': 'Subject: Ihr Code\n\nHallo {{name}}, bis {{expires_at}}.\n' },
      /^MAIL_TEMPLATES_DIR: registration-code\.de\.txt leaves out \{\{code\}\}, which registration-code mail requires$/],
    ['a required placeholder shown only in a section', { 'reset-code.de.txt': 'Subject: Code\n\n{{#code_link}}{{code}}{{/code_link}}\n' }, /reset-code\.de\.txt leaves out \{\{code\}\}/],
    ['no subject line', { 'account-active.de.txt': 'Hallo {{name}}\n' }, /^MAIL_TEMPLATES_DIR: account-active\.de\.txt has no subject: its first line must be "Subject: …", then a blank line$/],
    ['an empty subject', { 'account-active.de.txt': 'Subject:  \n\nHallo\n' }, /account-active\.de\.txt has no subject/],
    ['no blank line after the subject', { 'account-active.de.txt': 'Subject: Aktiv\nHallo\n' }, /account-active\.de\.txt has no subject/],
    ['bytes that are not UTF-8', { 'account-active.de.txt': Buffer.from('Subject: Gr\xfc\xdfe\n\nHallo\n', 'latin1') }, /^MAIL_TEMPLATES_DIR: account-active\.de\.txt is not valid UTF-8$/],
    ['an HTML template without its text', { 'account-active.de.html': 'Subject: Aktiv\n\n<p>Hallo {{name}}</p>\n' }, /^MAIL_TEMPLATES_DIR: account-active\.de\.html has no account-active\.de\.txt beside it/],
    ['an unknown kind', { 'registraton-code.de.txt': 'Subject: x\n\n{{code}}\n' }, /^MAIL_TEMPLATES_DIR: registraton-code\.de\.txt is not named kind\.locale\.txt/],
    ['a locale not written canonically', { 'account-active.de-at.txt': 'Subject: x\n\nHallo\n' }, /account-active\.de-at\.txt is not named kind\.locale/],
    ['a section left open', { 'account-active.de.txt': 'Subject: x\n\n{{#name}}Hallo\n' }, /account-active\.de\.txt has \{\{#name\}\} without its pair/],
  ];
  for (const [fault, files, message] of refusals) {
    it(`refuses ${fault}`, async () => {
      const dir = await templateDir(files);
      assert.throws(() => loadMailTemplates(dir), (error: Error) => error instanceof ConfigError && message.test(error.message) && !error.message.includes('\n'));
    });
  }

  it('refuses a directory it cannot read', () => {
    assert.throws(() => loadMailTemplates('/nonexistent/templates'), { message: 'MAIL_TEMPLATES_DIR /nonexistent/templates cannot be read (ENOENT)' });
  });

  it('names no template content in a refusal', async () => {
    const dir = await templateDir({ 'registration-code.de.txt': 'Subject: Geheimer Betreff\n\nGeheimer Text {{unknown}}\n' });
    assert.throws(() => loadMailTemplates(dir), (error: Error) => !/Geheim/.test(error.message));
  });

  it('takes a BOM, CRLF line ends and hidden files, and every kind with its built-in text as a template', async () => {
    const files: Record<string, string> = { '.keep': '', 'account-active.de.txt': '\ufeffSubject: Aktiv\r\n\r\nHallo {{name}}\r\n' };
    for (const kind of Object.keys(mailKinds)) files[`${kind}.en.txt`] = await readFile(new URL(`../../templates/${kind}.en.txt`, import.meta.url), 'utf8');
    const templates = loadMailTemplates(await templateDir(files));
    assert.equal(templates.size, Object.keys(mailKinds).length + 1);
    assert.equal(templates.get('account-active.de')?.text.subject, 'Aktiv');
  });
});

describe('rendering', () => {
  it('writes the built-in texts with the product, the support contact and a link with the code in its fragment', () => {
    const content = createMailRenderer(new Map(), settings).render(registrationCodeMail({ email: 'a@example.com', name: 'alice', locale: null }, 'ABCD-EFGH-JKLM-NPQR', inHalfAnHour, now));
    assert.equal(content.subject, 'Your registration code');
    assert.match(content.text, /It is valid for 30 min, until 2030-01-01T12:30:00Z\./);
    assert.match(content.text, /Or open this link: https:\/\/app\.acme\.example\/welcome#kind=registration-code&code=ABCD-EFGH-JKLM-NPQR\n/);
    assert.doesNotMatch(content.text, /\?[^ ]*ABCD/, 'never in a query');
    assert.match(content.text, /\n\nAcme: https:\/\/app\.acme\.example\/welcome\n$/);
    assert.doesNotMatch(content.text, /\n{3}|already had a registration waiting/, 'an empty section leaves no gap');
    const changed = createMailRenderer(new Map(), settings).render({ kind: 'password-changed', locale: null, values: { name: 'alice', time: 't', client_address: 'c' } });
    assert.match(changed.text, /contact support \(help@acme\.example\) at once\./);
    const plain = createMailRenderer().render({ kind: 'password-changed', locale: null, values: { name: 'alice', time: 't', client_address: 'c' } });
    assert.match(plain.text, /contact support at once\.\n$/, 'without the settings: no contact, no link, no footer');
  });

  it('takes the reader\'s locale, then its language, then MAIL_DEFAULT_LOCALE, then English', async () => {
    const templates = loadMailTemplates(await templateDir({
      'account-active.de.txt': 'Subject: Aktiv (de)\n\nHallo {{name}}\n',
      'account-active.de-AT.txt': 'Subject: Aktiv (de-AT)\n\nServus {{name}}\n',
      'account-active.fr.txt': 'Subject: Actif\n\nBonjour {{name}}\n',
    }));
    const subject = (locale: string | null, mailDefaultLocale: string | null = null) =>
      createMailRenderer(templates, { ...settings, mailDefaultLocale }).render({ kind: 'account-active', locale, values: { name: 'alice' } }).subject;
    assert.equal(subject('de-AT'), 'Aktiv (de-AT)');
    assert.equal(subject('de-CH'), 'Aktiv (de)');
    assert.equal(subject('it'), 'Your account is active');
    assert.equal(subject('it', 'fr'), 'Actif');
    assert.equal(subject(null, 'de'), 'Aktiv (de)');
    assert.deepEqual([...createMailRenderer(templates).locales].sort(), ['de', 'de-AT', 'en', 'fr']);
  });

  it('escapes hostile values in an HTML template and in the HTML made from the text; a value is never read as a template', async () => {
    const templates = loadMailTemplates(await templateDir({
      'passkey-added.de.txt': 'Subject: Passkey {{passkey_name}}\n\nHallo {{name}}, "{{passkey_name}}" ist neu.\n',
      'passkey-added.de.html': 'Subject: Passkey\n\n<p title="{{passkey_name}}">Hallo {{name}}, <b>{{passkey_name}}</b> ist neu.</p>\n',
    }));
    const renderer = createMailRenderer(templates, settings);
    const to = { email: 'a@example.com', name: hostile, locale: 'de' };
    const german = renderer.render(noticeMail('passkey-added', to, now, '192.0.2.7', { passkey_name: '{{code}}</b><img src=x onerror=alert(1)>' }));
    assert.equal(german.html, '<p title="{{code}}&#60;/b&#62;&#60;img src=x onerror=alert(1)&#62;">Hallo &#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;quoted&#39;, <b>{{code}}&#60;/b&#62;&#60;img src=x onerror=alert(1)&#62;</b> ist neu.</p>\n');
    assert.match(german.text, /^Hallo <script>alert\("x"\)<\/script> & 'quoted', "\{\{code\}\}<\/b><img src=x onerror=alert\(1\)>" ist neu\.\n$/, 'the text part is plain text');
    const english = renderer.render(noticeMail('passkey-added', { ...to, locale: 'en' }, now, '192.0.2.7', { passkey_name: '<img src=x>' }));
    assert.doesNotMatch(english.html, /<script|<img/);
    assert.match(english.html, /Hello &#60;script&#62;alert\(&#34;x&#34;\)&#60;\/script&#62; &#38; &#39;quoted&#39;,/);
  });

  it('puts no encoded word of a value in the subject: a reader sees the value as it was given', async () => {
    const templates = loadMailTemplates(await templateDir({
      'passkey-added.de.txt': 'Subject: Passkey {{passkey_name}} of {{product_name}}\n\nHallo {{name}}, "{{passkey_name}}".\n',
    }));
    const encodedWord = '=?utf-8?B?4oCuZXZpbA==?=';
    const renderer = createMailRenderer(templates, { ...settings, productName: '=?utf-8?Q?=E2=80=AE?=' });
    const to = { email: 'a@example.com', name: 'ab', locale: 'de' };
    const rendered = renderer.render(noticeMail('passkey-added', to, now, '192.0.2.7', { passkey_name: encodedWord }));
    const dir = await templateDir({});
    const transport = createFileTransport(dir, createLogger('error', () => {}));
    await transport.send({ ...rendered, messageId: '<1@test>', from: 'a@b.c', to: to.email });
    transport.close();
    const [file] = await readdir(dir);
    const received = await simpleParser(await readFile(join(dir, file!)));
    assert.doesNotMatch(received.subject ?? '', /\u202e/, 'no right-to-left override decoded from a value');
    assert.equal(received.subject?.replaceAll('\u200b', ''), `Passkey ${encodedWord} of =?utf-8?Q?=E2=80=AE?=`);
    assert.match(received.text ?? '', /^Hallo ab, "=\?utf-8\?B\?4oCuZXZpbA==\?="\.\n$/, 'the text part shows the name as it is');
  });
});

describe('mail preview', () => {
  it('renders a kind in a locale with sample values, as a command of its own and of admin, with no database', async () => {
    const dir = await templateDir({ 'registration-code.de.txt': 'Subject: Ihr Code für {{product_name}}\n\nHallo, Ihr Code: {{code}}\n{{#code_link}}Link: {{code_link}}{{/code_link}}\n' });
    for (const args of [['mail', 'preview'], ['admin', 'mail', 'preview']]) {
      const running = runMain({ MAIL_TEMPLATES_DIR: dir, PRODUCT_NAME: 'Acme', APP_URL: 'https://app.example', DATA_DIR: dir }, [...args, 'registration-code', '--locale', 'de']);
      assert.equal(await running.exit, 0, running.stderr());
      const output = running.lines.join('\n');
      assert.match(output, /^Subject: Ihr Code für Acme\n\nHallo, Ihr Code: ABCD-EFGH-JKLM-NPQR\nLink: https:\/\/app\.example#kind=registration-code&code=ABCD-EFGH-JKLM-NPQR\n/);
      assert.match(output, /--- HTML\n<!doctype html>/);
    }
    const english = runMain({ MAIL_TEMPLATES_DIR: dir, DATA_DIR: dir }, ['mail', 'preview', 'reset-code']);
    assert.equal(await english.exit, 0);
    assert.match(english.lines[0]!, /^Subject: Your password reset code$/);
    assert.match(english.stderr(), /^account-service: no template of reset-code in MAIL_TEMPLATES_DIR fits: this is the built-in English text\n$/, 'the fallback is said');
    const austrian = runMain({ MAIL_TEMPLATES_DIR: dir, DATA_DIR: dir }, ['mail', 'preview', 'registration-code', '--locale', 'de-AT']);
    assert.equal(await austrian.exit, 0);
    assert.match(austrian.stderr(), /no registration-code template for de-AT: this is the de one/);
    const unknown = runMain({ DATA_DIR: dir }, ['mail', 'preview', 'no-such-kind']);
    assert.equal(await unknown.exit, 2);
    assert.match(unknown.stderr(), /^account-service: usage: mail preview KIND \[--locale L\], KIND one of registration-code, /);
    const badLocale = runMain({ DATA_DIR: dir }, ['mail', 'preview', 'reset-code', '--locale', 'de_DE']);
    assert.equal(await badLocale.exit, 2);
  });

  it('refuses to start, in one line and exit 2, with a faulty template directory', async () => {
    const dir = await templateDir({ 'reset-code.de.txt': 'Subject: Code\n\nKein Code hier.\n' });
    const running = runMain({ MAIL_TEMPLATES_DIR: dir, DATA_DIR: dir, PORT: '0' });
    assert.equal(await running.exit, 2);
    assert.equal(running.stderr(), 'account-service: MAIL_TEMPLATES_DIR: reset-code.de.txt leaves out {{code}}, which reset-code mail requires\n');
  });
});

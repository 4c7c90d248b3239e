import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { codeIn, type ReceivedMail } from '../helpers/smtp.ts';
import { signIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

/** The operator's German texts, written as the README says: a subject line, a blank line, the body. */
const german: Record<string, string> = {
  'registration-code.de.txt': 'Subject: Ihr Registrierungscode für {{product_name}}\n\nHallo,\n\ndieser Code aktiviert das Konto "{{name}}":\n\n{{code}}\n\nEr gilt bis {{expires_at}}.{{#code_link}} Oder öffnen Sie {{code_link}}{{/code_link}}\n',
  'registration-code.de.html': 'Subject: Ihr Registrierungscode\n\n<p>Hallo <b>{{name}}</b>, Ihr Code: <code>{{code}}</code></p>\n',
  'account-active.de.txt': 'Subject: Ihr Konto ist aktiv\n\nHallo {{name}}, Ihr Konto ist aktiv.\n',
  'reset-code.de.txt': 'Subject: Ihr Code zum Zurücksetzen\n\nAngefragt um {{time}} von {{client_address}}. Der Code:\n\n{{code}}\n',
  'password-changed.de.txt': 'Subject: Ihr Passwort wurde geändert\n\nHallo {{name}}, um {{time}} von {{client_address}}. Waren Sie es nicht, schreiben Sie an {{support}}.\n',
  'email-change-requested.de.txt': 'Subject: Adressänderung angefragt\n\nHallo {{name}}, neue Adresse: {{new_email_masked}}. Bestätigungscode: {{code}}\n',
};

let app: TestService;
let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mail-de-'));
  for (const [name, content] of Object.entries(german)) await writeFile(join(dir, name), content);
  app = await startTestService({ env: { MAIL_TEMPLATES_DIR: dir, PRODUCT_NAME: 'Beispiel', SUPPORT_CONTACT: 'hilfe@beispiel.example', APP_URL: 'https://app.beispiel.example/konto' } });
});
after(async () => {
  await app.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The next mail to `to` whose subject matches, received after `since` messages. */
function mailTo(to: string, subject: RegExp, since = 0): Promise<ReceivedMail> {
  return app.smtp.waitFor((mail) => mail.to === to && subject.test(mail.subject) && app.smtp.messages.indexOf(mail) >= since);
}

async function register(user: ReturnType<typeof uniqueUser>, json: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ReceivedMail> {
  assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...user, ...json }, headers })).status, 204);
  return mailTo(user.email, /Registrierungscode|registration code/);
}

describe('mail in the operator\'s words and the account\'s language', () => {
  it('writes registration, activation, a notice and a reset in German to an account registered with locale de', async () => {
    const user = uniqueUser('de');
    const codeMail = await register(user, { locale: 'de' });
    assert.equal(codeMail.subject, 'Ihr Registrierungscode für Beispiel');
    const code = codeIn(codeMail);
    assert.match(codeMail.text, new RegExp(`dieser Code aktiviert das Konto "${user.name}":\\n\\n${code}\\n\\nEr gilt bis \\S+Z\\. Oder öffnen Sie https://app\\.beispiel\\.example/konto#kind=registration-code&code=${code}\\n`));
    assert.equal(codeMail.html.trim(), `<p>Hallo <b>${user.name}</b>, Ihr Code: <code>${code}</code></p>`, 'the HTML template');
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204);
    assert.match((await mailTo(user.email, /aktiv/)).subject, /^Ihr Konto ist aktiv$/);

    const token = await signIn(app, user.name, user.pwd);
    const me = await app.call('GET', '/acc/me', { token });
    assert.equal(me.json.locale, 'de');
    assert.equal((await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: `${user.pwd}-2` } })).status, 204);
    const notice = await mailTo(user.email, /Passwort/);
    assert.equal(notice.subject, 'Ihr Passwort wurde geändert');
    assert.match(notice.text, /schreiben Sie an hilfe@beispiel\.example\./);

    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const reset = await mailTo(user.email, /Zurücksetzen/);
    assert.match(reset.text, /^Angefragt um \S+Z von 127\.0\.0\.1\. Der Code:\n\n[A-Z-]{19}\n$/);
    // A kind the directory leaves out falls back to the built-in English text.
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(reset), new_pwd: 'reset-password-1' } })).status, 204);
    assert.match((await mailTo(user.email, /reset/)).subject, /^Your password was reset$/);
  });

  it('takes the locale from Accept-Language when the templates have it, and keeps it with the account', async () => {
    const swiss = uniqueUser('ch');
    assert.match((await register(swiss, {}, { 'accept-language': 'fr-CH, de-CH;q=0.8, en;q=0.5' })).subject, /^Ihr Registrierungscode/);
    const french = uniqueUser('fr');
    assert.equal((await register(french, {}, { 'accept-language': 'fr' })).subject, 'Your registration code');
    const named = uniqueUser('named');
    assert.equal((await register(named, { locale: 'EN-gb' }, { 'accept-language': 'de' })).subject, 'Your registration code', 'a named locale wins');

    for (const [user, locale] of [[swiss, 'de'], [french, null], [named, 'en-GB']] as const) {
      const mail = await mailTo(user.email, /./);
      assert.equal((await app.call('POST', '/acc/reg', { json: { code: codeIn(mail) } })).status, 204);
      const token = await signIn(app, user.name, user.pwd);
      assert.equal((await app.call('GET', '/acc/me', { token })).json.locale, locale, user.name);
    }
  });

  it('refuses a malformed locale with 400, and lets the owner change it (PUT /acc/me/locale)', async () => {
    const user = uniqueUser('change');
    for (const locale of ['deutsch', 'de_DE', 'x'.repeat(100), 7]) {
      const response = await app.call('POST', '/acc/reg/code', { json: { ...user, locale } });
      assert.equal(response.status, 400);
      assert.equal(response.json['invalid-params'][0].name, 'locale');
    }
    const code = codeIn(await register(user, {}));
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204);
    const token = await signIn(app, user.name, user.pwd);
    assert.equal((await app.call('PUT', '/acc/me/locale', { token, json: { locale: 'de-at' } })).status, 204);
    assert.equal((await app.call('GET', '/acc/me', { token })).json.locale, 'de-AT');
    assert.equal((await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: `${user.pwd}-2` } })).status, 204);
    assert.equal((await mailTo(user.email, /password|Passwort/)).subject, 'Ihr Passwort wurde geändert', 'de-AT falls back to de');

    const fresh = await signIn(app, user.name, `${user.pwd}-2`);
    assert.equal((await app.call('PUT', '/acc/me/locale', { token: fresh, json: { locale: 'tlh-Latn-ZZ-x' } })).status, 400);
    assert.equal((await app.call('PUT', '/acc/me/locale', { token: fresh, json: {} })).status, 400);
    assert.equal((await app.call('PUT', '/acc/me/locale', { json: { locale: 'de' } })).status, 401);
    assert.equal((await app.call('PUT', '/acc/me/locale', { token: fresh, json: { locale: null } })).status, 204);
    assert.equal((await app.call('GET', '/acc/me', { token: fresh })).json.locale, null);
  });

  it('writes a code to a new address in the request\'s locale, and the notice in the account\'s', async () => {
    const user = uniqueUser('move');
    const code = codeIn(await register(user, { locale: 'de' }));
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204);
    const token = await signIn(app, user.name, user.pwd);
    const newEmail = `${uniqueUser('moved').name}@example.org`;
    const asked = await app.call('POST', '/acc/me/email', { token, json: { pwd: user.pwd, email: newEmail }, headers: { 'accept-language': 'en-US' } });
    assert.equal(asked.status, 204);
    assert.equal((await mailTo(user.email, /Adress/)).subject, 'Adressänderung angefragt');
    assert.equal((await mailTo(newEmail, /./)).subject, 'Confirm your new e-mail address');
  });

  it('answers a registration alike whatever the address holds, and tells an account in its own locale', async () => {
    const owner = uniqueUser('owner');
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: codeIn(await register(owner, { locale: 'en' })) } })).status, 204);
    app.clock.advance(61); // past the address's cooldown
    const taken = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser('other'), email: owner.email, locale: 'de' } });
    const free = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser('free'), locale: 'de' } });
    assert.deepEqual([taken.status, taken.text], [free.status, free.text]);
    assert.equal((await mailTo(owner.email, /tried/)).subject, 'Someone tried to register with your address');
  });

  it('writes no template, subject or value to the log', () => {
    const log = app.logs.join('\n');
    for (const secret of ['Registrierungscode', 'Ihr Konto', 'Beispiel', 'hilfe@', 'Passwort', 'Hallo', '#kind=', dir]) {
      assert.equal(log.includes(secret), false, secret);
    }
    assert.doesNotMatch(log, /[A-Z]{4}-[A-Z]{4}-[A-Z]{4}-[A-Z]{4}/, 'no code');
    assert.ok(app.logs.some((line) => line.includes('outbox message sent')), 'the log did see the mail go out');
  });
});

describe('a faulty template directory', () => {
  it('stops the service before it starts, naming the file and the placeholder', async () => {
    const faulty = await mkdtemp(join(tmpdir(), 'mail-faulty-'));
    try {
      await writeFile(join(faulty, 'password-changed.de.txt'), 'Subject: Geändert\n\nHallo {{name}}, {{code}}\n');
      await assert.rejects(startTestService({ env: { MAIL_TEMPLATES_DIR: faulty } }), {
        name: 'ConfigError',
        message: 'MAIL_TEMPLATES_DIR: password-changed.de.txt uses {{code}}, which password-changed mail does not have (it has product_name, support, app_url, name, time, client_address)',
      });
    } finally {
      await rm(faulty, { recursive: true, force: true });
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { codeIn } from '../helpers/smtp.ts';
import { waitUntil } from '../helpers/wait.ts';
import { requestCode, signIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

let app: TestService;
before(async () => {
  app = await startTestService();
});
after(async () => {
  await app.stop();
});

async function countRows(email: string): Promise<number> {
  const [row] = await app.service.sql`SELECT count(*)::int AS n FROM accounts WHERE lower(email) = lower(${email})`;
  return row!.n as number;
}

describe('POST /acc/reg/code and POST /acc/reg', () => {
  it('e-mails a code with its expiry and lifetime, and activates the account with it', async () => {
    const user = { ...uniqueUser(), phone: '+41 123 456 7890' };
    const response = await app.call('POST', '/acc/reg/code', { json: user });
    assert.equal(response.status, 204);
    assert.equal(response.text, '');
    const mail = await app.smtp.waitFor((message) => message.to === user.email);
    assert.equal(mail.subject, 'Your registration code');
    assert.match(mail.text, /[A-Z]{4}-[A-Z]{4}-[A-Z]{4}-[A-Z]{4}/);
    assert.match(mail.text, /until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/);
    assert.match(mail.text, /valid for 30 minutes/);
    assert.match(mail.text, /If you did not ask to register, ignore this message/);
    assert.match(mail.html, /<p>/);

    const activated = await app.call('POST', '/acc/reg', { json: { code: codeIn(mail) } });
    assert.equal(activated.status, 204);
    const notice = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your account is active');
    assert.match(notice.text, /now active/);

    const token = await signIn(app, user.name, user.pwd);
    const me = await app.call('GET', '/acc/me', { token });
    assert.equal(me.status, 200);
    assert.equal(me.json.name, user.name);
    assert.equal(me.json.email, user.email);
    assert.equal(me.json.phone, user.phone);
    assert.match(me.json.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  it('stores neither the password nor the code in plain text, and erases the sent message', async () => {
    const user = uniqueUser();
    const code = await requestCode(app, user);
    const [account] = await app.service.sql`SELECT * FROM accounts WHERE email = ${user.email}`;
    assert.match(account!.password_hash, /^\$scrypt\$ln=4,r=8,p=1\$/);
    assert.equal(Buffer.from(account!.code_hash).length, 32);
    const dump = JSON.stringify(await app.service.sql`SELECT * FROM accounts`) + JSON.stringify(await app.service.sql`SELECT * FROM outbox`);
    assert.equal(dump.includes(user.pwd), false);
    assert.equal(dump.includes(code), false);
    const outboxRow = async () => (await app.service.sql`SELECT state, sealed_content FROM outbox WHERE recipient = ${user.email}`)[0]!;
    await waitUntil(async () => (await outboxRow()).state !== 'pending');
    const sent = await outboxRow();
    assert.equal(sent!.state, 'sent');
    assert.equal(sent!.sealed_content, null);
  });

  it('accepts the code in any letter case, once', async () => {
    const user = uniqueUser();
    const code = await requestCode(app, user);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: code.toLowerCase() } })).status, 204);
    const again = await app.call('POST', '/acc/reg', { json: { code } });
    assert.equal(again.status, 404);
    assert.equal(again.json.type, 'urn:account-service:problem:unknown-code');
  });

  it('answers 404 for a well-formed code that was never issued', async () => {
    const response = await app.call('POST', '/acc/reg', { json: { code: 'ABCD-EFGH-IJKL-MNOP' } });
    assert.equal(response.status, 404);
    assert.equal(response.headers['content-type'], 'application/problem+json');
    assert.equal(response.json.type, 'urn:account-service:problem:unknown-code');
  });

  it('answers 410 for an expired code, and the expiry frees the name and the address', async () => {
    const user = uniqueUser();
    const code = await requestCode(app, user);
    app.clock.advance(1801);
    const expired = await app.call('POST', '/acc/reg', { json: { code } });
    assert.equal(expired.status, 410);
    assert.equal(expired.json.type, 'urn:account-service:problem:code-expired');
    assert.equal(await countRows(user.email), 1, 'an expired registration is still there until it is replaced or swept');

    const other = { ...uniqueUser(), name: user.name };
    assert.equal((await app.call('POST', '/acc/reg/code', { json: other })).status, 204, 'the expired name is free for another address');
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email: user.email } })).status, 204, 'the expired address is free again');
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 404, 'the expired code is gone with its registration');
  });

  it('replaces a pending registration of the same address after 60 s, and the old code stops working', async () => {
    const user = uniqueUser();
    const first = await requestCode(app, user);
    const tooSoon = await app.call('POST', '/acc/reg/code', { json: user });
    assert.equal(tooSoon.status, 429);
    assert.equal(tooSoon.json.type, 'urn:account-service:problem:too-soon');
    const retryAfter = Number(tooSoon.headers['retry-after']);
    assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`);

    app.clock.advance(61);
    const renamed = { ...user, name: `${user.name}-b`, pwd: 'another-password' };
    const second = await requestCode(app, renamed);
    assert.notEqual(second, first);
    assert.equal(await countRows(user.email), 1);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: first } })).status, 404, 'the old code no longer works');
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: second } })).status, 204);
    await signIn(app, renamed.name, renamed.pwd);
  });

  it('answers 409 for a name held by an active account or by another address pending', async () => {
    const holder = uniqueUser();
    await requestCode(app, holder);
    const pendingClash = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), name: holder.name } });
    assert.equal(pendingClash.status, 409);
    assert.equal(pendingClash.json.type, 'urn:account-service:problem:name-taken');

    const active = uniqueUser();
    const code = await requestCode(app, active);
    await app.call('POST', '/acc/reg', { json: { code } });
    const activeClash = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), name: active.name } });
    assert.equal(activeClash.status, 409);
  });

  it('answers an address that already has an account exactly like a new one, and tells only the owner', async () => {
    const owner = uniqueUser();
    await app.call('POST', '/acc/reg', { json: { code: await requestCode(app, owner) } });
    const fresh = uniqueUser();

    const known = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email: owner.email.toUpperCase() } });
    const unknown = await app.call('POST', '/acc/reg/code', { json: fresh });
    assert.equal(known.status, unknown.status);
    assert.equal(known.text, unknown.text);
    const strip = (headers: Record<string, unknown>) => Object.keys(headers).filter((name) => name !== 'date' && name !== 'x-request-id').sort().map((name) => `${name}: ${headers[name]}`);
    assert.deepEqual(strip(known.headers), strip(unknown.headers));

    const notice = await app.smtp.waitFor((message) => message.subject === 'Someone tried to register with your address');
    assert.equal(notice.to.toLowerCase(), owner.email.toLowerCase());
    assert.doesNotMatch(notice.text, /[A-Z]{4}-[A-Z]{4}-[A-Z]{4}-[A-Z]{4}/);
    assert.equal(await countRows(owner.email), 1, 'nothing new is stored for the known address');

    const noticesBefore = app.smtp.messages.filter((message) => message.subject.startsWith('Someone tried')).length;
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email: owner.email } })).status, 204);
    app.clock.advance(3601);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email: owner.email } })).status, 204);
    await app.smtp.waitFor((message) => message.subject.startsWith('Someone tried') && app.smtp.messages.filter((m) => m.subject.startsWith('Someone tried')).length > noticesBefore);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(app.smtp.messages.filter((message) => message.subject.startsWith('Someone tried')).length, noticesBefore + 1, 'at most one notice an hour');
    const token = await signIn(app, owner.name, owner.pwd);
    assert.equal((await app.call('GET', '/acc/me', { token })).json.name, owner.name, 'the owner account is untouched');
  });

  it('does the same scrypt work and as many statements for an address with an account as for a new one', async () => {
    const { createPasswordHasher } = await import('../../src/passwords.ts');
    const real = createPasswordHasher({ ln: 4, r: 8, p: 1 });
    let hashes = 0;
    const statements: string[] = [];
    const counted = await startTestService({
      passwords: { ...real, hash: (password) => ((hashes += 1), real.hash(password)) },
      onQuery: (text) => statements.push(text.replace(/\s+/g, ' ').trim()),
    });
    const attempt = async (json: object) => {
      hashes = 0;
      statements.length = 0;
      const response = await counted.call('POST', '/acc/reg/code', { json });
      // Only the request's own statements: the outbox worker's polling shares the pool.
      const own = statements.filter((text) => !/^(begin|commit)$/i.test(text) && !/FROM outbox|UPDATE outbox/.test(text));
      return { response, hashes, kinds: own.map((text) => text.split(' ').slice(0, 3).join(' ')) };
    };
    try {
      const owner = uniqueUser();
      await counted.call('POST', '/acc/reg', { json: { code: await requestCode(counted, owner) } });
      const known = await attempt({ ...uniqueUser(), email: owner.email });
      const unknown = await attempt(uniqueUser());
      assert.equal(known.hashes, 1);
      assert.equal(unknown.hashes, known.hashes);
      assert.equal(known.response.status, unknown.response.status);
      assert.equal(known.response.text, unknown.response.text);
      // The same number of statements, differing only in the write: the owner's notice
      // (UPDATE accounts) where a new address gets its registration (INSERT INTO accounts).
      assert.deepEqual(known.kinds, ['DELETE FROM accounts', 'SELECT id, activated_at,', 'UPDATE accounts SET', 'INSERT INTO outbox']);
      assert.deepEqual(unknown.kinds, ['DELETE FROM accounts', 'SELECT id, activated_at,', 'INSERT INTO accounts', 'INSERT INTO outbox']);
    } finally {
      await counted.stop();
    }
  });

  it('lets exactly one of many concurrent requests for one name win', async () => {
    const name = uniqueUser('race').name;
    const attempts = Array.from({ length: 12 }, (_, index) => ({ name, email: `race-${index}-${name}@example.com`, pwd: 'password-1' }));
    const statuses = (await Promise.all(attempts.map((json) => app.call('POST', '/acc/reg/code', { json })))).map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 204).length, 1, `statuses: ${statuses}`);
    assert.equal(statuses.filter((status) => status === 409).length, attempts.length - 1, `statuses: ${statuses}`);
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM accounts WHERE name = ${name}`;
    assert.equal(row!.n, 1);
  });

  it('lets one of concurrent requests for one new address win and asks the others to wait', async () => {
    const email = uniqueUser('same').email;
    const attempts = Array.from({ length: 6 }, (_, index) => ({ name: `same-${index}-${process.pid}`, email, pwd: 'password-1' }));
    const responses = await Promise.all(attempts.map((json) => app.call('POST', '/acc/reg/code', { json })));
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 204).length, 1, `statuses: ${statuses}`);
    assert.ok(responses.filter((response) => response.status === 429).every((response) => Number(response.headers['retry-after']) > 0));
    assert.equal(await countRows(email), 1);
  });

  it('keeps a pending registration across a restart of the service', async () => {
    const user = uniqueUser();
    const code = await requestCode(app, user);
    await app.restart();
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204);
    await signIn(app, user.name, user.pwd);
  });

  it('sweeps registrations that expired more than an hour ago', async () => {
    const { deleteExpiredRegistrations } = await import('../../src/registrations.ts');
    const user = uniqueUser();
    await requestCode(app, user);
    app.clock.advance(1800 + 3601);
    const deleted = await deleteExpiredRegistrations(app.service.sql, new Date(app.clock.now().getTime() - 3600_000));
    assert.ok(deleted >= 1);
    assert.equal(await countRows(user.email), 0);
  });
});

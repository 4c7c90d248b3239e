import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { codeIn } from '../helpers/smtp.ts';
import { untilQueuesDrained, waitUntil } from '../helpers/wait.ts';
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
    assert.match(mail.text, new RegExp(`this code activates the account "${user.name}"`));
    assert.match(mail.text, /until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/);
    assert.match(mail.text, /valid for 30 min,/);
    assert.match(mail.text, /If you did not ask to register "[a-z0-9-]+", ignore this message/);
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
    const [stored] = await app.service.sql`SELECT code_hash, purpose FROM one_time_codes WHERE account_id = ${account!.id}`;
    assert.equal(Buffer.from(stored!.code_hash).length, 32);
    assert.equal(stored!.purpose, 'registration');
    const tables = ['accounts', 'outbox', 'one_time_codes', 'address_quotas'];
    const dump = (await Promise.all(tables.map((table) => app.service.sql`SELECT * FROM ${app.service.sql(table)}`))).map((rows) => JSON.stringify(rows)).join('');
    assert.equal(dump.includes(user.pwd), false);
    assert.equal(dump.includes(code), false);
    assert.equal(dump.toLowerCase().includes(code.toLowerCase()), false);
    const [quota] = await app.service.sql`SELECT address_key FROM address_quotas WHERE purpose = 'registration' ORDER BY last_at DESC LIMIT 1`;
    assert.equal(Buffer.from(quota!.address_key).length, 32, 'the address is counted only under a keyed hash');
    const mail = app.smtp.messages.find((message) => message.to === user.email)!;
    const outboxRow = async () => (await app.service.sql`SELECT state, sealed_content, recipient FROM outbox WHERE message_id = ${mail.messageId}`)[0]!;
    await waitUntil(async () => (await outboxRow()).state !== 'pending');
    const sent = await outboxRow();
    assert.equal(sent!.state, 'sent');
    assert.equal(sent!.sealed_content, null);
    assert.equal(sent!.recipient, null, 'sent mail keeps no address');
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
    // Their resolution (request-resolver.ts) deletes the expired registration, with its code.
    await waitUntil(async () => (await app.service.sql`SELECT count(*)::int AS n FROM registration_requests`)[0]!.n === 0);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 404, 'the expired code is gone with its registration');
  });

  it('never lets a later request change a pending registration (the takeover found by outside testers)', async () => {
    const victim = { ...uniqueUser('victim'), phone: '+41 123 456 7890' };
    const firstCode = await requestCode(app, victim);
    app.clock.advance(61);
    const attacker = { name: uniqueUser('attacker').name, email: victim.email.toUpperCase(), pwd: 'attacker-password' };
    const secondCode = await requestCode(app, { ...attacker, email: victim.email });
    assert.notEqual(secondCode, firstCode);
    const mail = app.smtp.messages.filter((message) => message.text.includes(secondCode))[0]!;
    assert.match(mail.text, new RegExp(`activates the account "${victim.name}"`), 'the new code names the first request\'s account');
    assert.match(mail.text, /already had a registration waiting\. The code activates that registration as it was first asked for/, 'and warns that it is the first request\'s');
    assert.doesNotMatch(mail.text, new RegExp(attacker.name));
    assert.equal(await countRows(victim.email), 1);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: firstCode } })).status, 404, 'older codes stop working');
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: secondCode } })).status, 204);

    const me = await app.call('GET', '/acc/me', { token: await signIn(app, victim.name, victim.pwd) });
    assert.deepEqual([me.json.name, me.json.email, me.json.phone], [victim.name, victim.email, victim.phone], 'the first request\'s data');
    const attackerSignIn = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: victim.email, password: attacker.pwd } });
    assert.equal(attackerSignIn.status, 400, "the attacker's password does not open the account");
    const [account] = await app.service.sql`SELECT count(*)::int AS n FROM accounts WHERE name = ${attacker.name}`;
    assert.equal(account!.n, 0, "the attacker's name went to no account; it is only held for the address until the code lifetime ends");
  });

  it('keeps the expiry of the first request when a repeat sends a new code', async () => {
    const user = uniqueUser();
    await requestCode(app, user);
    app.clock.advance(20 * 60);
    const code = await requestCode(app, user);
    const mail = app.smtp.messages.find((message) => message.text.includes(code))!;
    assert.match(mail.text, /valid for (9|10) min,/, 'what is left of the first request\'s 30 minutes');
    app.clock.advance(10 * 60 + 1);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 410);
  });

  it('answers two quick requests alike for an address with an account and one without', async () => {
    const owner = uniqueUser();
    await app.call('POST', '/acc/reg', { json: { code: await requestCode(app, owner) } });
    app.clock.advance(61);
    const fresh = uniqueUser();
    const pair = async (email: string) => [
      await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email } }),
      await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email } }),
    ];
    const [known, unknown] = [await pair(owner.email), await pair(fresh.email)];
    assert.deepEqual(known.map((response) => response.status), [204, 429]);
    assert.deepEqual(unknown.map((response) => response.status), [204, 429]);
    assert.equal(known[1]!.text, unknown[1]!.text);
    assert.equal(known[1]!.json.type, 'urn:account-service:problem:too-soon');
    assert.ok(Number(known[1]!.headers['retry-after']) > 0);
  });

  it('answers a taken name with 409 whatever the address holds', async () => {
    const owner = uniqueUser();
    await app.call('POST', '/acc/reg', { json: { code: await requestCode(app, owner) } });
    const other = uniqueUser();
    await app.call('POST', '/acc/reg', { json: { code: await requestCode(app, other) } });
    const pending = uniqueUser();
    await requestCode(app, pending);
    app.clock.advance(61);
    for (const email of [owner.email, pending.email, uniqueUser().email]) {
      const response = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), name: other.name, email } });
      assert.equal(response.status, 409, email);
      assert.equal(response.json.type, 'urn:account-service:problem:name-taken');
    }
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

  it('answers an address that already has an account exactly like a new one, and tells only the owner at the stored address', async () => {
    const base = uniqueUser();
    const owner = { ...base, email: `M-X-${base.email}` };
    await app.call('POST', '/acc/reg', { json: { code: await requestCode(app, owner) } });
    app.clock.advance(61);
    const fresh = uniqueUser();

    const known = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email: owner.email.toLowerCase() } });
    const unknown = await app.call('POST', '/acc/reg/code', { json: fresh });
    assert.equal(known.status, unknown.status);
    assert.equal(known.text, unknown.text);
    const strip = (headers: Record<string, unknown>) => Object.keys(headers).filter((name) => name !== 'date' && name !== 'x-request-id').sort().map((name) => `${name}: ${headers[name]}`);
    assert.deepEqual(strip(known.headers), strip(unknown.headers));

    const notice = await app.smtp.waitFor((message) => message.subject === 'Someone tried to register with your address' && message.to.toLowerCase() === owner.email.toLowerCase());
    assert.equal(notice.to, owner.email, 'the notice goes to the address as stored, not as typed');
    assert.doesNotMatch(notice.text, /[A-Z]{4}-[A-Z]{4}-[A-Z]{4}-[A-Z]{4}/);
    assert.match(notice.text, /POST \/acc\/pwd\/code/, 'it points to password reset');
    assert.equal(await countRows(owner.email), 1, 'nothing new is stored for the known address');

    const notices = () => app.smtp.messages.filter((message) => message.subject === notice.subject && message.to === owner.email).length;
    await untilQueuesDrained(app.service.sql);
    assert.equal(notices(), 1);
    app.clock.advance(61);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email: owner.email } })).status, 204);
    await untilQueuesDrained(app.service.sql);
    assert.equal(notices(), 1, 'no second notice within the hour');
    app.clock.advance(3601);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser(), email: owner.email } })).status, 204);
    await untilQueuesDrained(app.service.sql);
    assert.equal(notices(), 2, 'and one again after it');
    const token = await signIn(app, owner.name, owner.pwd);
    assert.equal((await app.call('GET', '/acc/me', { token })).json.name, owner.name, 'the owner account is untouched');
  });

  it('does the same scrypt work and as many statements for an address with an account as for a new one', async () => {
    const { createPasswordHasher } = await import('../../src/core/passwords.ts');
    const real = createPasswordHasher({ ln: 4, r: 8, p: 1 });
    let hashes = 0;
    const statements: string[] = [];
    const counted = await startTestService({
      passwords: { ...real, hash: (password) => ((hashes += 1), real.hash(password)) },
      onQuery: (text) => statements.push(text.replace(/\s+/g, ' ').trim()),
    });
    const attempt = async (json: object) => {
      // The previous request's resolution and mail first, so that their statements are not counted here.
      await untilQueuesDrained(counted.service.sql);
      hashes = 0;
      statements.length = 0;
      const response = await counted.call('POST', '/acc/reg/code', { json });
      // Only the request's own statements: the outbox worker's polling shares the pool, and the
      // request's resolution (request-resolver.ts) follows its last statement.
      const polling = statements.filter((text) => !/^(begin|commit)$/i.test(text) && !/FROM outbox|UPDATE outbox|DELETE FROM (reset|registration|sign_in_code)_requests/.test(text));
      const own = polling.slice(0, polling.findIndex((text) => text.startsWith('INSERT INTO registration_requests')) + 1);
      return { response, hashes, kinds: own.map((text) => text.split(' ').slice(0, 3).join(' ')) };
    };
    try {
      const owner = uniqueUser();
      await counted.call('POST', '/acc/reg', { json: { code: await requestCode(counted, owner) } });
      const pending = uniqueUser();
      await requestCode(counted, pending);
      counted.clock.advance(61);
      const known = await attempt({ ...uniqueUser(), email: owner.email });
      const waiting = await attempt({ ...uniqueUser(), email: pending.email });
      const unknown = await attempt(uniqueUser());
      for (const other of [waiting, unknown]) {
        assert.equal(other.hashes, 1);
        assert.equal(other.response.status, known.response.status);
        assert.equal(other.response.text, known.response.text);
      }
      assert.equal(known.hashes, 1);
      // The same checks in the same order, and the same writes: the request only records that
      // it was asked; what the address holds decides only the worker's later writes.
      const same = ['SELECT EXISTS (SELECT', 'INSERT INTO name_holds', 'INSERT INTO address_quotas', 'INSERT INTO registration_requests'];
      for (const attempt of [known, waiting, unknown]) assert.deepEqual(attempt.kinds, same);
    } finally {
      await counted.stop();
    }
  });

  it('lets exactly one of many concurrent requests for one name win', async () => {
    const name = uniqueUser('race').name;
    const attempts = Array.from({ length: 12 }, (_, index) => ({ name, email: `race-${index}-${name}@example.com`, pwd: 'race-password-1' }));
    const statuses = (await Promise.all(attempts.map((json) => app.call('POST', '/acc/reg/code', { json })))).map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 204).length, 1, `statuses: ${statuses}`);
    assert.equal(statuses.filter((status) => status === 409).length, attempts.length - 1, `statuses: ${statuses}`);
    // The request holds the name; the worker writes the pending account 0-2 s later and mails
    // its code, so the count is taken once the winner's message has arrived.
    const winner = attempts[statuses.indexOf(204)]!;
    await app.smtp.waitFor((message) => message.to === winner.email);
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM accounts WHERE name = ${name}`;
    assert.equal(row!.n, 1);
  });

  it('lets one of concurrent requests for one address win and asks the others to wait, whatever the address holds', async () => {
    const owner = uniqueUser('same');
    await app.call('POST', '/acc/reg', { json: { code: await requestCode(app, owner) } });
    const pending = uniqueUser('same');
    await requestCode(app, pending);
    app.clock.advance(3601);
    for (const email of [owner.email, pending.email, uniqueUser('same').email]) {
      await untilQueuesDrained(app.service.sql);
      const mailsBefore = app.smtp.messages.filter((message) => message.to === email).length;
      const attempts = Array.from({ length: 6 }, () => ({ ...uniqueUser('burst'), email }));
      const responses = await Promise.all(attempts.map((json) => app.call('POST', '/acc/reg/code', { json })));
      const statuses = responses.map((response) => response.status);
      assert.deepEqual(statuses.sort(), [204, 429, 429, 429, 429, 429], email);
      assert.ok(responses.filter((response) => response.status === 429).every((response) => Number(response.headers['retry-after']) > 0));
      await untilQueuesDrained(app.service.sql);
      assert.equal(await countRows(email), 1);
      assert.equal(app.smtp.messages.filter((message) => message.to === email).length, mailsBefore + 1, `one message to ${email}`);
    }
  });

  it('keeps a pending registration across a restart of the service', async () => {
    const user = uniqueUser();
    const code = await requestCode(app, user);
    await app.restart();
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204);
    await signIn(app, user.name, user.pwd);
  });

  it('sweeps registrations that expired more than an hour ago', async () => {
    const { deleteExpiredRegistrations } = await import('../../src/features/registration/store.ts');
    const user = uniqueUser();
    await requestCode(app, user);
    app.clock.advance(1800 + 3601);
    const deleted = await deleteExpiredRegistrations(app.service.sql, new Date(app.clock.now().getTime() - 3600_000));
    assert.ok(deleted >= 1);
    assert.equal(await countRows(user.email), 0);
  });
});

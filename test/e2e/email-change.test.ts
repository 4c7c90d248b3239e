import assert from 'node:assert/strict';
import { generateCode, hashCode } from '../../src/core/one-time-codes.ts';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { emailChangeBody, eventsOf, passwordGrant } from '../helpers/accounts.ts';
import { stopWallClock } from '../helpers/clock.ts';
import { seen, type HttpResult } from '../helpers/http.ts';
import { codeIn, type ReceivedMail } from '../helpers/smtp.ts';
import { registerAndSignIn, requestCode, signIn, keyedHashesOf, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { acceptedEvents, startReceiver } from '../helpers/webhook-receiver.ts';
import { untilFailedSignIns, untilQueuesDrained } from '../helpers/wait.ts';

let app: TestService;
before(async () => {
  app = await startTestService();
});
after(async () => {
  await app.stop();
});

const codeSubject = 'Confirm your new e-mail address';
const requestedSubject = 'A change of your e-mail address was asked for';
const changedSubject = 'Your e-mail address was changed';
const attemptSubject = 'Someone tried to use your address';

const askChange = (token: string, json: unknown) => app.call('POST', '/acc/me/email', { token, json });
const confirm = async (code: string) => app.call('POST', '/acc/email', { json: await emailChangeBody(app, code) });
/** Every request resolved and every message it caused delivered: counts of mail are final (wait.ts). */
const settled = () => untilQueuesDrained(app.service.sql);

/** The first message after `from` (an index into the received mail) that matches. */
function mailAfter(from: number, to: string, subject: string): Promise<ReceivedMail> {
  return app.smtp.waitFor((mail) => app.smtp.messages.indexOf(mail) >= from && mail.to.toLowerCase() === to.toLowerCase() && mail.subject === subject);
}

/** An active account with a token, once its activation notice is delivered (so that it arrives before what a test counts). */
async function newAccount(): ReturnType<typeof registerAndSignIn> {
  const account = await registerAndSignIn(app);
  await app.smtp.waitFor((mail) => mail.to === account.user.email && mail.subject === 'Your account is active');
  return account;
}

/** Asks for a change to `email` and returns the code mailed to it. */
async function requestChangeCode(token: string, pwd: string, email: string): Promise<string> {
  const from = app.smtp.messages.length;
  assert.equal((await askChange(token, { pwd, email })).status, 204);
  return codeIn(await mailAfter(from, email, codeSubject));
}

describe('POST /acc/me/email and POST /acc/email', () => {
  it("needs the code mailed to the current address too: a password and a thief's own mailbox move nothing", async () => {
    const { user, token } = await newAccount();
    const code = await requestChangeCode(token, user.pwd, `thief-${user.email}`);
    const without = await app.call('POST', '/acc/email', { json: { code, current_code: 'ABCD-EFGH-JKLM-NPQR' } });
    assert.equal(without.status, 404, without.text);
    assert.equal((await app.call('GET', '/acc/me', { token })).json.email, user.email, 'the address stays');
    assert.equal((await confirm(code)).status, 204, 'the refused attempt used up neither code');
  });

  it('moves the account to the new address: a code to the new one, notices to the old one, sign-in by the new only', async () => {
    const { user, token } = await newAccount();
    const other = await signIn(app, user.name, user.pwd);
    const newEmail = `Moved-${user.name}@Example.org`;
    const from = app.smtp.messages.length;
    const asked = await askChange(token, { pwd: user.pwd, email: newEmail });
    assert.equal(asked.status, 204);
    assert.equal(asked.text, '');

    const codeMail = await mailAfter(from, newEmail, codeSubject);
    assert.equal(codeMail.to.split('@')[0], newEmail.split('@')[0], 'to the new address as typed (the mailer lower-cases the domain)');
    assert.match(codeMail.text, new RegExp(`the account "${user.name}" asked to use this address`));
    assert.match(codeMail.text, /valid for 30 min, until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/);
    assert.match(codeMail.raw, /^Auto-Submitted: auto-generated\r?$/m);
    assert.match(codeMail.html, /<p>/);
    const notice = await mailAfter(from, user.email, requestedSubject);
    assert.match(notice.text, /from the address 127\.0\.0\.1, a session of your account asked to change its e-mail address to M\*\*\*@E\*\*\*\.org/);
    assert.match(notice.text, /sign out everywhere/);
    assert.equal(notice.text.includes(codeIn(codeMail)), false, 'the code goes only to the new address');
    assert.equal((await passwordGrant(app, user.email, user.pwd)).status, 200, 'nothing changes before the confirmation');

    const confirmed = await confirm(codeIn(codeMail).toLowerCase());
    assert.equal(confirmed.status, 204, 'any letter case');
    assert.equal(confirmed.text, '');
    const changed = await mailAfter(from, user.email, changedSubject);
    assert.match(changed.text, /changed to M\*\*\*@E\*\*\*\.org at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z, confirmed from the address 127\.0\.0\.1/);
    assert.equal(changed.text.includes(newEmail), false, 'the new address only masked');
    for (const mail of [notice, changed]) {
      assert.match(mail.raw, /^Auto-Submitted: auto-generated\r?$/m, mail.subject);
      assert.match(mail.html, /<p>Hello /, mail.subject);
    }

    assert.equal((await passwordGrant(app, newEmail.toLowerCase(), user.pwd)).status, 200, 'sign-in by the new address, in any case');
    assert.equal((await passwordGrant(app, user.email, user.pwd)).status, 400, 'the old address no longer signs in');
    assert.equal((await passwordGrant(app, user.name, user.pwd)).status, 200, 'the name still does');
    const me = await app.call('GET', '/acc/me', { token });
    assert.equal(me.status, 200, 'the session that asked lives on');
    assert.equal(me.json.email, newEmail, 'letter case kept as typed');
    assert.equal((await app.call('GET', '/acc/me', { token: other })).status, 401, 'every other session ended');
    const events = (await eventsOf(app, token)).map((event) => event.type);
    assert.deepEqual(events.filter((type: string) => type.startsWith('email')), ['email-changed', 'email-change-requested']);
    assert.equal((await confirm(codeIn(codeMail))).status, 404, 'a code works once');

    // A reset asked for the old address behaves as for any unknown address; the new one gets it.
    const beforeReset = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: newEmail } })).status, 204);
    await settled();
    assert.deepEqual(app.smtp.messages.slice(beforeReset).map((mail) => mail.to.toLowerCase()), [newEmail.toLowerCase()], 'nothing to the old address');
    const dump = JSON.stringify(await app.service.sql`SELECT * FROM one_time_codes`) + JSON.stringify(await app.service.sql`SELECT * FROM outbox`);
    assert.equal(dump.toUpperCase().includes(codeIn(codeMail)), false, 'the code never rests in plain text');
    assert.equal(app.logs.join('').toUpperCase().includes(codeIn(codeMail)), false, 'nor reaches the log');
  });

  it('answers a taken new address exactly as a free one, and sends it no code', async (t) => {
    // The transcripts hold Retry-After: time moves only by the advance, however busy the machine.
    t.after(stopWallClock());
    const active = await newAccount();
    const pending = uniqueUser('pending');
    await requestCode(app, pending);
    const targets = { free: uniqueUser('free').email, active: active.user.email, pending: pending.email };
    const callers = await Promise.all(Object.keys(targets).map(() => newAccount()));
    const from = app.smtp.messages.length;
    const transcripts: Record<string, string[]> = {};
    for (const [index, [state, email]] of Object.entries(targets).entries()) {
      const { user, token } = callers[index]!;
      const ask = async () => seen(await askChange(token, { pwd: user.pwd, email }));
      // A request, a repeat at once (the cooldown), and one after it.
      const answers = [await ask(), await ask()];
      app.clock.advance(61);
      answers.push(await ask());
      transcripts[state] = answers;
    }
    assert.deepEqual(transcripts.active, transcripts.free);
    assert.deepEqual(transcripts.pending, transcripts.free);
    assert.deepEqual(transcripts.free!.map((answer) => answer.split('\n')[0]), ['204', '429', '204']);

    await mailAfter(from, targets.free, codeSubject);
    const toActive = await mailAfter(from, active.user.email, attemptSubject);
    assert.match(toActive.text, new RegExp(`already belongs to your account "${active.user.name}"`));
    const toPending = await mailAfter(from, pending.email, attemptSubject);
    assert.match(toPending.text, /a registration of the account .* that waits for its code/);
    assert.match(toActive.raw, /^Auto-Submitted: auto-generated\r?$/m);
    await settled();
    const received = app.smtp.messages.slice(from);
    for (const email of [targets.active, targets.pending]) {
      assert.deepEqual(received.filter((mail) => mail.to === email).map((mail) => mail.subject), [attemptSubject], `${email}: one notice an hour, and no code`);
    }
    assert.equal(received.filter((mail) => mail.to === targets.free && mail.subject === codeSubject).length, 2);
    assert.deepEqual(
      callers.map(({ user }) => received.filter((mail) => mail.to === user.email).map((mail) => mail.subject)),
      callers.map(() => [requestedSubject, requestedSubject]),
      'the current address is told alike',
    );
    // The same rows: each caller's account holds one pending change, whatever the address held.
    const rows = await app.service.sql`
      SELECT count(*)::int AS n FROM one_time_codes c JOIN accounts a ON a.id = c.account_id
      WHERE c.purpose = 'email-change' AND a.email IN ${app.service.sql(callers.map(({ user }) => user.email))}`;
    assert.equal(rows[0]!.n, 3);
    assert.equal((await passwordGrant(app, active.user.email, active.user.pwd)).status, 200, 'the holder keeps its address');
  });

  it('runs the same statements whatever the new address holds; only the holder notice within the hour is skipped', async () => {
    const statements: string[] = [];
    const counted = await startTestService({ onQuery: (text) => statements.push(text.replace(/\s+/g, ' ').trim()) });
    try {
      const account = async () => {
        const user = uniqueUser();
        await counted.call('POST', '/acc/reg', { json: { code: await requestCode(counted, user) } });
        return { user, token: await signIn(counted, user.name, user.pwd) };
      };
      const holder = await account();
      const callers = [await account(), await account(), await account()];
      const ask = async (caller: { user: { pwd: string }; token: string }, email: string) => {
        statements.length = 0;
        const response = await counted.call('POST', '/acc/me/email', { token: caller.token, json: { pwd: caller.user.pwd, email } });
        assert.equal(response.status, 204);
        // Only the request's own statements: the background workers' polling shares the pool.
        return statements.filter((text) => !/^(begin|commit)$/i.test(text) && !/FROM (outbox|registration_requests|reset_requests|sign_in_code_requests|webhook_events)\b|UPDATE outbox SET/.test(text));
      };
      const free = await ask(callers[0]!, uniqueUser('free').email);
      const taken = await ask(callers[1]!, holder.user.email);
      assert.deepEqual(taken, free, 'the same statements, in the same order');
      assert.equal(free.filter((text) => text.startsWith('INSERT INTO outbox')).length, 2);
      counted.clock.advance(61);
      const notifiedLately = await ask(callers[2]!, holder.user.email);
      assert.deepEqual(notifiedLately, free.slice(0, -1), 'one insert fewer: no second notice within the hour');
    } finally {
      await counted.stop();
    }
  });

  it('answers 403 for a wrong password, counts it in the sign-in throttle, and sends nothing', async () => {
    const { user, token } = await newAccount();
    const target = uniqueUser('target').email;
    const from = app.smtp.messages.length;
    for (let i = 0; i < 5; i += 1) {
      const wrong = await askChange(token, { pwd: 'wrong-password', email: target });
      assert.equal(wrong.status, 403);
      assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-password');
    }
    const blocked = await askChange(token, { pwd: user.pwd, email: target });
    assert.equal(blocked.status, 429);
    assert.equal(blocked.json.type, 'urn:account-service:problem:throttled');
    assert.ok(Number(blocked.headers['retry-after']) >= 1);
    await settled();
    assert.deepEqual(app.smtp.messages.slice(from).map((mail) => mail.subject), []);
    await untilFailedSignIns(app.service.sql, user.name, 5);
    const events = (await eventsOf(app, token)).map((event) => event.type);
    assert.equal(events.filter((type: string) => type === 'sign-in-failed').length, 5);
    app.clock.advance(2);
    assert.equal((await askChange(token, { pwd: user.pwd, email: target })).status, 204, 'the quota of the address was not spent by the refusals');
  });

  it('refuses bad bodies and missing tokens, before the password is checked', async () => {
    const { user, token } = await newAccount();
    for (const body of [{}, { pwd: user.pwd }, { email: 'a@example.com' }, { pwd: user.pwd, email: 'not-an-address' }, { pwd: user.pwd, email: 42 }, { pwd: user.pwd, email: 'a@example.com', otp: '12345' }, { pwd: user.pwd, email: 'a@example.com', otp: 123456 }, { pwd: 'short', email: 'a@example.com' }]) {
      const response = await askChange(token, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.json.type, 'urn:account-service:problem:invalid-fields');
    }
    const noToken = await app.call('POST', '/acc/me/email', { json: { pwd: user.pwd, email: 'a@example.com' } });
    assert.equal(noToken.status, 401);
    assert.equal(noToken.headers['www-authenticate'], 'Bearer realm="accounts"');
    assert.equal((await app.call('POST', '/acc/me/email', { token, body: '{}', headers: { 'content-type': 'text/plain' } })).status, 415);
    const current = 'ABCD-EFGH-JKLM-NPQR';
    for (const body of [{}, { code: 'not-a-code', current_code: current }, { code: 'ABCD-EFGH-IJKL-MNOP', extra: 1 }, { code: 42 }, { code: current }]) {
      const response = await app.call('POST', '/acc/email', { json: body });
      assert.equal(response.status, 400, JSON.stringify(body));
    }
    assert.equal((await app.call('POST', '/acc/email', { body: 'x'.repeat(9000), headers: { 'content-type': 'application/json' } })).status, 413);
  });

  it('answers 404 for an unknown code or one of another purpose, and 410 for an expired one', async () => {
    const unknown = await confirm('ABCD-EFGH-IJKL-MNOP');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.type, 'urn:account-service:problem:unknown-code');
    const pending = uniqueUser();
    const registrationCode = await requestCode(app, pending);
    assert.equal((await confirm(registrationCode)).status, 404, 'a registration code is unknown here');

    const { user, token } = await newAccount();
    const code = await requestChangeCode(token, user.pwd, uniqueUser('late').email);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 404, 'and an e-mail change code at activation');
    app.clock.advance(1801);
    const expired = await confirm(code);
    assert.equal(expired.status, 410);
    assert.equal(expired.json.type, 'urn:account-service:problem:code-expired');
    assert.equal((await passwordGrant(app, user.email, user.pwd)).status, 200, 'the address is unchanged');
  });

  it('keeps one pending change per account: a new request replaces the previous one and its code', async () => {
    const { user, token } = await newAccount();
    const first = uniqueUser('first').email;
    const second = uniqueUser('second').email;
    const firstCode = await requestChangeCode(token, user.pwd, first);
    app.clock.advance(61);
    const secondCode = await requestChangeCode(token, user.pwd, second);
    assert.equal((await confirm(firstCode)).status, 404, 'the replaced code stops working');
    assert.equal((await confirm(secondCode)).status, 204);
    assert.equal((await app.call('GET', '/acc/me', { token })).json.email, second);
    assert.equal((await passwordGrant(app, first, user.pwd)).status, 400);
  });

  it('applies the new address cooldown and daily cap, whoever asks', async () => {
    const target = uniqueUser('cooled').email;
    const one = await newAccount();
    const two = await newAccount();
    assert.equal((await askChange(one.token, { pwd: one.user.pwd, email: target })).status, 204);
    const soon = await askChange(two.token, { pwd: two.user.pwd, email: target.toUpperCase() });
    assert.equal(soon.status, 429, 'another account, another letter case: the same address');
    assert.equal(soon.json.type, 'urn:account-service:problem:too-soon');
    assert.ok(Number(soon.headers['retry-after']) >= 1 && Number(soon.headers['retry-after']) <= 60);
    for (let i = 1; i < 10; i += 1) {
      app.clock.advance(61);
      assert.equal((await askChange(one.token, { pwd: one.user.pwd, email: target })).status, 204, `request ${i + 1}`);
    }
    app.clock.advance(61);
    const capped = await askChange(one.token, { pwd: one.user.pwd, email: target });
    assert.equal(capped.status, 429);
    assert.equal(capped.json.type, 'urn:account-service:problem:daily-limit');
  });

  it("bounds one account's requests whatever new address it names, and a refused request costs nothing", async () => {
    // Every request mails the current address and writes an event: an outside tester sent 80
    // in 13 s, 80 notices to one mailbox, and pushed every other event out of the account's view.
    const { user, token } = await newAccount();
    const other = await newAccount();
    const from = app.smtp.messages.length;
    const notices = () => app.smtp.messages.slice(from).filter((mail) => mail.to === user.email && mail.subject === requestedSubject).length;
    const ask = (email: string) => askChange(token, { pwd: user.pwd, email });
    const firstNewEmail = uniqueUser('bound').email;
    assert.equal((await ask(firstNewEmail)).status, 204);
    // The account's quota is a row of a purpose of its own, keyed by its public id; the new
    // address's is the address's.
    const keys = await keyedHashesOf(app);
    const publicId = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub as string;
    const purposesOf = async (key: Buffer) => (await app.service.sql`SELECT purpose FROM address_quotas WHERE address_key = ${key}`).map((row) => row.purpose);
    assert.deepEqual(await purposesOf(keys.address(publicId)), ['account-email-change']);
    assert.deepEqual(await purposesOf(keys.address(firstNewEmail)), ['email-change']);
    assert.deepEqual(await purposesOf(keys.address(`account:${publicId}`)), [], 'no fake address');
    const again = await ask(uniqueUser('bound').email);
    assert.equal(again.status, 429, 'another new address, within the minute');
    assert.equal(again.json.type, 'urn:account-service:problem:too-soon');
    assert.ok(Number(again.headers['retry-after']) >= 1 && Number(again.headers['retry-after']) <= 60);

    // The new address's refusal rolls the account's reservation back.
    app.clock.advance(61);
    const taken = uniqueUser('bound').email;
    assert.equal((await askChange(other.token, { pwd: other.user.pwd, email: taken })).status, 204);
    assert.equal((await ask(taken)).status, 429, "the new address's cooldown");
    assert.equal((await ask(uniqueUser('bound').email)).status, 204, "the refused request spent nothing of the account's");

    for (let i = 2; i < 10; i += 1) {
      app.clock.advance(61);
      assert.equal((await ask(uniqueUser('bound').email)).status, 204, `request ${i + 1}`);
    }
    app.clock.advance(61);
    const capped = await ask(uniqueUser('bound').email);
    assert.equal(capped.status, 429);
    assert.equal(capped.json.type, 'urn:account-service:problem:daily-limit');
    await settled();
    assert.equal(notices(), 10, 'one notice to the current address per accepted request');
    const [row] = await app.service.sql`
      SELECT count(*)::int AS n FROM security_events e JOIN accounts a ON a.id = e.account_id
      WHERE a.name = ${user.name} AND e.type = 'email-change-requested'`;
    assert.equal(row!.n, 10);
  });

  it('ends a pending change with the session that asked: signing out everywhere cancels it', async () => {
    const { user, token } = await newAccount();
    const code = await requestChangeCode(token, user.pwd, uniqueUser('cancelled').email);
    assert.equal((await app.call('DELETE', '/acc/me/sessions', { token })).status, 204);
    assert.equal((await confirm(code)).status, 404);
  });

  it('forgets the networks that signed in with the old address, so that they do not vouch for its next holder', async () => {
    const { user, token } = await newAccount();
    assert.equal((await passwordGrant(app, user.email, user.pwd)).status, 200);
    const keys = await keyedHashesOf(app);
    const known = async () => (await app.service.sql`SELECT count(*)::int AS n FROM login_known_clients WHERE identifier_key = ${keys.loginIdentifier(user.email)}`)[0]!.n as number;
    assert.equal(await known(), 1);
    const code = await requestChangeCode(token, user.pwd, uniqueUser('moved').email);
    assert.equal((await confirm(code)).status, 204);
    assert.equal(await known(), 0);
  });

  it('stops reset codes mailed to the old address from working', async () => {
    const { user, token } = await newAccount();
    const from = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const resetCode = codeIn(await mailAfter(from, user.email, 'Your password reset code'));
    const code = await requestChangeCode(token, user.pwd, uniqueUser('away').email);
    assert.equal((await confirm(code)).status, 204);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: resetCode, new_pwd: 'taken-over-1' } })).status, 404);
  });

  it('tells only the mailbox owner, at confirmation, that the address was taken meanwhile', async () => {
    const { user, token } = await newAccount();
    const target = uniqueUser('contested');
    const code = await requestChangeCode(token, user.pwd, target.email);
    await requestCode(app, target);
    const taken = await confirm(code);
    assert.equal(taken.status, 409);
    assert.equal(taken.json.type, 'urn:account-service:problem:email-taken');
    assert.equal((await app.call('GET', '/acc/me', { token })).json.email, user.email, 'nothing changed');
  });

  it('lets exactly one of two accounts confirming the same address at once win, enforced by the database', async () => {
    for (let round = 0; round < 5; round += 1) {
      const target = uniqueUser('raced').email;
      const one = await newAccount();
      const two = await newAccount();
      const codeOne = await requestChangeCode(one.token, one.user.pwd, target);
      app.clock.advance(61);
      const codeTwo = await requestChangeCode(two.token, two.user.pwd, target.toUpperCase());
      const answers = await Promise.all([confirm(codeOne), confirm(codeTwo)]);
      const statuses = answers.map((answer) => answer.status).sort();
      assert.deepEqual(statuses, [204, 409], `round ${round}`);
      assert.equal(answers.find((answer) => answer.status === 409)!.json.type, 'urn:account-service:problem:email-taken');
      const holders = await app.service.sql`SELECT name FROM accounts WHERE lower(email) = lower(${target})`;
      const winner = answers[0]!.status === 204 ? one : two;
      assert.deepEqual(holders.map((row) => row.name), [winner.user.name]);
    }
  });

  it('races with the other writers on one account: no 500, and the address is the new one exactly when a confirmation won', async () => {
    type Round = { user: { name: string; pwd: string; email: string }; a: string; b: string; sessionA: string; code: string; target: string; deletionCode: string };
    const sid = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid as string;
    const writers: Record<string, { allowed: number[]; send(round: Round): Promise<HttpResult> }> = {
      confirm: { allowed: [204, 404], send: (r) => confirm(r.code) },
      request: { allowed: [204, 401], send: (r) => askChange(r.a, { pwd: r.user.pwd, email: uniqueUser('again').email }) },
      change: { allowed: [204, 401], send: (r) => app.call('PUT', '/acc/me/pwd', { token: r.a, json: { old_pwd: r.user.pwd, new_pwd: 'raced-password-1' } }) },
      // 403: a confirmed change voids the codes mailed to the old address, the deletion's among them.
      delete: { allowed: [204, 401, 403], send: (r) => app.call('DELETE', '/acc/me', { token: r.a, json: { pwd: r.user.pwd, email_code: r.deletionCode } }) },
      'end-all': { allowed: [204, 401], send: (r) => app.call('DELETE', '/acc/me/sessions', { token: r.a }) },
      'end-asking': { allowed: [204, 401, 404], send: (r) => app.call('DELETE', `/acc/me/sessions/${r.sessionA}`, { token: r.b }) },
    };
    const pairs = [['confirm', 'confirm'], ['confirm', 'request'], ['confirm', 'change'], ['confirm', 'delete'], ['confirm', 'end-all'], ['confirm', 'end-asking'], ['request', 'change'], ['request', 'delete']] as const;
    for (const [first, second] of pairs) {
      for (let i = 0; i < 3; i += 1) {
        const { user, token: a } = await registerAndSignIn(app);
        const b = await signIn(app, user.name, user.pwd);
        const target = uniqueUser('racing').email;
        const code = await requestChangeCode(a, user.pwd, target);
        // DELETE /acc/me's second step needs the code its first step mails: one stored as that step stores it.
        const deletionCode = generateCode();
        await app.service.sql`
          INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at)
          SELECT ${hashCode(deletionCode)}, 'deletion', id, now() + interval '1 hour', now() FROM accounts WHERE name = ${user.name}`;
        const round: Round = { user, a, b, sessionA: sid(a), target, code, deletionCode };
        // Past the account's own cooldown, so that a racing request is decided by the race.
        app.clock.advance(61);
        const results = await Promise.all([first, second].map(async (kind) => {
          await delay(Math.random() * 4);
          return writers[kind]!.send(round);
        }));
        const label = `${first} × ${second}, round ${i}`;
        [first, second].forEach((kind, index) => assert.ok(writers[kind]!.allowed.includes(results[index]!.status), `${label}: ${kind} answered ${results[index]!.status} ${results[index]!.text}`));
        const confirmed = [first, second].filter((kind, index) => kind === 'confirm' && results[index]!.status === 204).length;
        assert.ok(confirmed <= 1, `${label}: a code works once`);
        const [row] = await app.service.sql`SELECT email FROM accounts WHERE name = ${user.name}`;
        if (row === undefined) {
          assert.ok([first, second].includes('delete'), `${label}: only a deletion removes the account`);
          continue;
        }
        assert.equal(row.email, confirmed === 1 ? target : user.email, `${label}: the address is the new one exactly when the confirmation won`);
      }
    }
  });

  it('tells the application by the webhook account.email_changed, with the new address', async () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const receiver = await startReceiver(secret);
    const hooked = await startTestService({ env: { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret }, webhooks: { pollMs: 100 } });
    try {
      const user = uniqueUser();
      await hooked.call('POST', '/acc/reg', { json: { code: await requestCode(hooked, user) } });
      const token = await signIn(hooked, user.name, user.pwd);
      const account = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub as string;
      const newEmail = `Hooked-${user.email}`;
      const from = hooked.smtp.messages.length;
      assert.equal((await hooked.call('POST', '/acc/me/email', { token, json: { pwd: user.pwd, email: newEmail } })).status, 204);
      const code = codeIn(await hooked.smtp.waitFor((mail) => hooked.smtp.messages.indexOf(mail) >= from && mail.subject === codeSubject));
      assert.equal((await hooked.call('POST', '/acc/email', { json: await emailChangeBody(hooked, code) })).status, 204);
      const changed = () => acceptedEvents(receiver.received).filter((event) => event.data.account_id === account && event.type === 'account.email_changed');
      await receiver.waitFor(() => changed().length === 1);
      assert.deepEqual(changed()[0]!.data, { email: newEmail, account_id: account });
    } finally {
      await hooked.stop();
      await receiver.stop();
    }
  });
});

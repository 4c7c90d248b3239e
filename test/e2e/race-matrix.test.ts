import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { hashCode } from '../../src/core/one-time-codes.ts';
import { createPasswordHasher } from '../../src/core/passwords.ts';
import { passwordGrant } from '../helpers/accounts.ts';
import { form, type HttpResult } from '../helpers/http.ts';
import { startTestService, testEncryptionKeys, testSecret, uniqueUser, type TestService } from '../helpers/service.ts';
import { commandDeps } from '../../src/commands.ts';
import { parseConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { disableAccount } from '../../src/features/operators/disable.ts';
import type { UseCaseDeps } from '../../src/core/transaction.ts';

// Every pair of writers on one account, in parallel over real HTTP, with jitter: password change,
// reset, deletion, ending one session (DELETE /acc/me/sessions/{id} or POST /auth/revoke),
// ending all, enrolling a second factor, refresh and sign-in. After each round the account must be whole: no 500, no
// session alive that one of the winners ended, and every winner's writes all there. Then an
// operator's disable against the owner's sign-in and refresh (issue 33).

let app: TestService;
before(async () => {
  // Mail is not looked at; the outbox worker idles so that it does not compete for the machine.
  app = await startTestService({ outbox: { pollMs: 60_000 } });
});
after(async () => {
  await app.stop();
});

const oldPassword = 'race-password-0';
type Session = { id: string; access: string; refresh: string };
type Round = { accountId: string; name: string; email: string; code: string; deletionCode: string; a: Session; b: Session; c: Session; signedIn: string[] };
type Writer = { kind: string; allowed: number[]; send(round: Round, second: boolean): Promise<HttpResult> };

const sessionOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid as string;

const writers: Writer[] = [
  { kind: 'change', allowed: [204, 401], send: (r, second) => app.call('PUT', '/acc/me/pwd', { token: r.a.access, json: { old_pwd: oldPassword, new_pwd: second ? 'race-password-2' : 'race-password-1' } }) },
  { kind: 'reset', allowed: [204, 404], send: (r, second) => app.call('POST', '/acc/pwd', { json: { code: r.code, new_pwd: second ? 'race-password-4' : 'race-password-3' } }) },
  { kind: 'delete', allowed: [204, 401], send: (r) => app.call('DELETE', '/acc/me', { token: r.a.access, json: { pwd: oldPassword, email_code: r.deletionCode } }) },
  {
    kind: 'end-one',
    allowed: [200, 204, 401, 404],
    send: (r, second) => (second ? app.call('POST', '/auth/revoke', form({ token: r.b.refresh })) : app.call('DELETE', `/acc/me/sessions/${r.b.id}`, { token: r.a.access })),
  },
  { kind: 'end-all', allowed: [204, 401], send: (r) => app.call('DELETE', '/acc/me/sessions', { token: r.a.access }) },
  // 429: each enrollment mails a code, once a minute per account; of two at once, one waits.
  {
    kind: 'enroll',
    allowed: [200, 401, 429],
    send: (r) => app.call('POST', '/acc/me/totp', { token: r.a.access, json: { pwd: oldPassword } }),
  },
  { kind: 'refresh', allowed: [200, 400], send: (r) => app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: r.c.refresh })) },
  {
    kind: 'sign-in',
    allowed: [200, 400],
    send: async (r) => {
      const response = await passwordGrant(app, r.name, oldPassword, { form: true });
      if (response.status === 200) r.signedIn.push(sessionOf(response.json.access_token));
      return response;
    },
  },
];

let storedHash = '';
async function newRound(): Promise<Round> {
  const user = uniqueUser('race');
  const [row] = await app.service.sql`
    INSERT INTO accounts (name, email, password_hash, activated_at) VALUES (${user.name}, ${user.email}, ${storedHash}, now()) RETURNING id`;
  const accountId = row!.id as string;
  const code = `RACE-${accountId.padStart(4, '0').slice(-4)}-ABCD-EFGH`.replace(/[0-9]/g, (digit) => 'QRSTUVWXYZ'[Number(digit)]!);
  // DELETE /acc/me's second step needs the code its first step mails: this one, stored as that step stores it.
  const deletionCode = code.replace('RACE', 'DELE');
  await app.service.sql`
    INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at)
    VALUES (${hashCode(code)}, 'reset', ${accountId}, now() + interval '1 hour', now()),
      (${hashCode(deletionCode)}, 'deletion', ${accountId}, now() + interval '1 hour', now())`;
  const sessions = await Promise.all([0, 1, 2].map(async () => {
    const response = await passwordGrant(app, user.name, oldPassword, { form: true });
    assert.equal(response.status, 200, response.text);
    return { id: sessionOf(response.json.access_token), access: response.json.access_token as string, refresh: response.json.refresh_token as string };
  }));
  return { accountId, name: user.name, email: user.email, code, deletionCode, a: sessions[0]!, b: sessions[1]!, c: sessions[2]!, signedIn: [] };
}

const jitter = () => delay(Math.random() * 4);

async function runRound(first: Writer, second: Writer): Promise<void> {
  const round = await newRound();
  const logsBefore = app.logs.length;
  const pair = [first, second];
  const results = await Promise.all(pair.map(async (writer, index) => {
    await jitter();
    return writer.send(round, index === 1 && first.kind === second.kind);
  }));
  const label = `${first.kind} × ${second.kind}`;
  const won = (kind: string) => pair.some((writer, index) => writer.kind === kind && [200, 204].includes(results[index]!.status));
  // A refusal names what the service logged for it (a busy database's code, say).
  const warnings = () => app.logs.slice(logsBefore).filter((line) => /"level":"(warn|error)"/.test(line)).join('\n');
  pair.forEach((writer, index) => {
    const { status, text } = results[index]!;
    assert.ok(writer.allowed.includes(status), `${label}: ${writer.kind} answered ${status} ${text}\n${warnings()}`);
  });

  const sql = app.service.sql;
  const [account] = await sql`SELECT password_hash FROM accounts WHERE id = ${round.accountId}`;
  const live = (await sql`SELECT id FROM sessions WHERE account_id = ${round.accountId}`).map((row) => row.id as string);
  const events = (await sql`SELECT type FROM security_events WHERE account_id = ${round.accountId}`).map((row) => row.type as string);
  const count = (type: string) => events.filter((event) => event === type).length;

  if (won('delete')) {
    assert.equal(account, undefined, `${label}: the account is gone`);
    assert.deepEqual(live, [], `${label}: with every session`);
    const [left] = await sql`SELECT count(*)::int AS n FROM one_time_codes WHERE account_id = ${round.accountId}`;
    assert.equal(left!.n, 0, `${label}: and every code`);
    return;
  }
  assert.notEqual(account, undefined, `${label}: nobody deleted the account`);
  const signedInAfter = (ids: string[]) => ids.filter((id) => !round.signedIn.includes(id));
  if (won('change') || won('reset')) {
    // A sign-in with the old password either lost to the change, or its session was ended by it.
    assert.deepEqual(live, [], `${label}: a password change or reset ends every session`);
    const changes = pair.filter((writer, index) => writer.kind === 'change' && results[index]!.status === 204).length;
    const resets = pair.filter((writer, index) => writer.kind === 'reset' && results[index]!.status === 204).length;
    assert.equal(count('password-changed'), changes, `${label}: one event per change`);
    assert.equal(count('password-reset'), resets, `${label}: one event per reset`);
    assert.equal((await passwordGrant(app, round.name, oldPassword, { form: true })).status, 400, `${label}: the old password no longer works`);
  } else {
    assert.equal((await passwordGrant(app, round.name, oldPassword, { form: true })).status, 200, `${label}: the password is unchanged`);
  }
  if (won('reset')) {
    const [codes] = await sql`SELECT count(*)::int AS n FROM one_time_codes WHERE account_id = ${round.accountId} AND purpose = 'reset'`;
    assert.equal(codes!.n, 0, `${label}: the reset code is used up`);
  }
  if (won('end-all')) {
    assert.deepEqual(signedInAfter(live), [], `${label}: after signing out everywhere only a racing sign-in's session may live`);
    assert.equal(count('signed-out-everywhere'), pair.filter((writer, index) => writer.kind === 'end-all' && results[index]!.status === 204).length);
  }
  if (won('enroll')) {
    const [pending] = await sql`SELECT count(*)::int AS n FROM second_factors WHERE account_id = ${round.accountId} AND activated_at IS NULL`;
    assert.equal(pending!.n, 1, `${label}: one pending enrollment, which asks nothing at sign-in`);
  }
  if (won('end-one')) assert.ok(!live.includes(round.b.id), `${label}: the ended session is dead`);
  // Every live session is one chain: exactly one live refresh token.
  for (const id of live) {
    const [tokens] = await sql`SELECT count(*)::int AS n FROM refresh_tokens WHERE session_id = ${id} AND spent_at IS NULL`;
    assert.equal(tokens!.n, 1, `${label}: session ${id} has one live refresh token`);
  }
  // A session is alive exactly when its access token is accepted.
  for (const session of [round.a, round.b, round.c]) {
    const status = (await app.call('GET', '/acc/me', { token: session.access })).status;
    assert.equal(status, live.includes(session.id) ? 200 : 401, `${label}: GET /acc/me agrees with the sessions table`);
  }
}

describe('every pair of writers on one account, in parallel', () => {
  before(async () => {
    storedHash = await createPasswordHasher({ ln: 4, r: 8, p: 1 }).hash(oldPassword);
  });

  const rounds = Number(process.env.RACE_ROUNDS ?? 8);
  for (const [i, first] of writers.entries()) {
    for (const second of writers.slice(i)) {
      it(`${first.kind} × ${second.kind}: no 500, no session left alive, nothing half-written (${rounds} rounds)`, async () => {
        // Two rounds at a time, on two accounts, so that the pool's connections interleave too.
        for (let round = 0; round < rounds; round += 2) await Promise.all([runRound(first, second), runRound(second, first)]);
      });
    }
  }
});

describe("an operator's disable, in parallel with the owner's sign-in and refresh", () => {
  let deps: UseCaseDeps;
  before(async () => {
    storedHash = await createPasswordHasher({ ln: 4, r: 8, p: 1 }).hash(oldPassword);
    const config = parseConfig({ DATABASE_URL: 'postgres://unused/db', TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys });
    const settled = { ...config, databaseUrl: '', tokenSecrets: config.tokenSecrets!, encryptionKeys: config.encryptionKeys! };
    deps = await commandDeps(app.service.sql, settled, createLogger('error', () => {}));
  });

  const rounds = Number(process.env.RACE_ROUNDS ?? 8);
  for (const racer of ['sign-in', 'refresh'] as const) {
    it(`disable × ${racer}: the racer wins before and its session ends, or it is refused; nothing lives after (${rounds} rounds)`, async () => {
      for (let i = 0; i < rounds; i++) {
        const round = await newRound();
        const [disabled, raced] = await Promise.all([
          jitter().then(() => disableAccount(deps, round.name, { address: 'race', reason: 'race' })),
          jitter().then(() =>
            racer === 'sign-in' ? passwordGrant(app, round.name, oldPassword, { form: true }) : app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: round.c.refresh })),
          ),
        ]);
        assert.equal(disabled.outcome, 'done');
        assert.ok([200, 400].includes(raced.status), `${racer} answered ${raced.status} ${raced.text}`);
        if (raced.status === 400) assert.equal(raced.json.error, racer === 'sign-in' ? 'account_disabled' : 'invalid_grant');
        const live = await app.service.sql`SELECT id FROM sessions WHERE account_id = ${round.accountId}`;
        assert.equal(live.length, 0, 'a disabled account has no session');
        if (raced.status === 200) assert.equal((await app.call('GET', '/acc/me', { token: raced.json.access_token })).status, 401, "the racer's token is refused");
        for (const session of [round.a, round.b, round.c]) assert.equal((await app.call('GET', '/acc/me', { token: session.access })).status, 401);
        const [events] = await app.service.sql`SELECT count(*)::int AS n FROM security_events WHERE account_id = ${round.accountId} AND type = 'account-disabled'`;
        assert.equal(events!.n, 1, 'one event, written whole');
      }
    });
  }
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { passwordGrant } from '../helpers/accounts.ts';
import { form, type HttpResult } from '../helpers/http.ts';
import { roundTripBudgets } from '../helpers/round-trip-budgets.ts';
import { codeIn } from '../helpers/smtp.ts';
import { startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { untilQueuesDrained } from '../helpers/wait.ts';

// The round trips each path sends to PostgreSQL, BEGIN and COMMIT included, counted through the
// driver's query hook, against the budgets of test/helpers/round-trip-budgets.ts.
const budgets = roundTripBudgets;

let app: TestService;
const seen: Array<{ text: string; connection: number }> = [];
before(async () => {
  app = await startTestService({ onQuery: (text, connection) => seen.push({ text: text.replace(/\s+/g, ' ').trim(), connection }) });
});
after(async () => {
  await app.stop();
});

/** The statements of the request alone: the outbox worker's transactions (on their own connection) are left out. */
async function count(send: () => Promise<HttpResult>): Promise<{ response: HttpResult; statements: string[] }> {
  // The work that earlier requests left to the workers first, so that none of it falls in the window.
  await untilQueuesDrained(app.service.sql);
  seen.length = 0;
  const response = await send();
  assert.ok(response.status < 300, `${response.status} ${response.text}`);
  const byConnection = new Map<number, string[]>();
  for (const { text, connection } of seen) byConnection.set(connection, [...(byConnection.get(connection) ?? []), text]);
  const statements: string[] = [];
  const worker = (text: string) => /SKIP LOCKED|^UPDATE outbox SET (state|attempts)|^DELETE FROM outbox WHERE id =/.test(text);
  const keep = (block: string[]) => {
    if (!block.some(worker)) statements.push(...block);
  };
  const ends = (text: string) => /^(commit|rollback)$/i.test(text);
  for (const texts of byConnection.values()) {
    // A connection's statements in order: transactions, and single statements (pipelined, a
    // request's and a worker's may share the connection). A transaction has its connection to
    // itself, so what comes before an end with no BEGIN in the window is the rest of a
    // transaction begun before it: the worker's. A transaction or a single statement that
    // touches the outbox queue as the worker does is the worker's.
    let singles: string[] = [];
    let transaction: string[] | null = null;
    for (const text of texts) {
      // The driver reads the array types once per new connection: not the path's work.
      if (text.includes('pg_catalog.pg_type')) continue;
      if (transaction !== null) {
        transaction.push(text);
        if (ends(text)) {
          keep(transaction);
          transaction = null;
        }
      } else if (/^begin/i.test(text)) {
        singles.forEach((single) => keep([single]));
        singles = [];
        transaction = [text];
      } else if (ends(text)) {
        singles = [];
      } else {
        singles.push(text);
      }
    }
    singles.forEach((single) => keep([single]));
    // A transaction still open at the end began in the window and ended after it: not the request's.
  }
  return { response, statements };
}

const measured: Record<string, number> = {};

describe('round trips per path', () => {
  it('stay within their budgets', async () => {
    const user = uniqueUser('trips');
    const check = async (path: string, send: () => Promise<HttpResult>) => {
      const { response, statements } = await count(send);
      measured[path] = statements.length;
      assert.ok(statements.length <= budgets[path]!, `${path}: ${statements.length} round trips, budget ${budgets[path]}:\n${statements.join('\n')}`);
      return response;
    };
    const before = app.smtp.messages.length;
    await check('registration request', () => app.call('POST', '/acc/reg/code', { json: user }));
    const mail = await app.smtp.waitFor((message) => message.to === user.email && app.smtp.messages.indexOf(message) >= before);
    await check('activation', () => app.call('POST', '/acc/reg', { json: { code: codeIn(mail) } }));
    const signIn = () => passwordGrant(app, user.name, user.pwd, { form: true });
    const first = (await check('sign-in', signIn)).json;
    const second = (await check('refresh', () => app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: first.refresh_token })))).json;
    await check('GET /acc/me', () => app.call('GET', '/acc/me', { token: second.access_token }));
    const third = (await signIn()).json;
    const sid = JSON.parse(Buffer.from((third.access_token as string).split('.')[1]!, 'base64url').toString()).sid as string;
    await check('revoke one session', () => app.call('DELETE', `/acc/me/sessions/${sid}`, { token: second.access_token }));
    await check('revoke a token (RFC 7009)', () => app.call('POST', '/auth/revoke', form({ token: second.refresh_token })));
    const fourth = (await signIn()).json;
    await check('revoke every session', () => app.call('DELETE', '/acc/me/sessions', { token: fourth.access_token }));
    const fifth = (await signIn()).json;
    await check('password change', () => app.call('PUT', '/acc/me/pwd', { token: fifth.access_token, json: { old_pwd: user.pwd, new_pwd: 'trips-password-2' } }));
    const resetBefore = app.smtp.messages.length;
    await check('reset request', () => app.call('POST', '/acc/pwd/code', { json: { email: user.email } }));
    const resetMail = await app.smtp.waitFor((message) => message.to === user.email && message.subject.includes('reset') && app.smtp.messages.indexOf(message) >= resetBefore, 10_000);
    await check('reset confirmation', () => app.call('POST', '/acc/pwd', { json: { code: codeIn(resetMail), new_pwd: 'trips-password-3' } }));
    const last = (await app.call('POST', '/auth/token', form({ grant_type: 'password', username: user.name, password: 'trips-password-3' }))).json;
    const deletionBefore = app.smtp.messages.length;
    await check('deletion request', () => app.call('DELETE', '/acc/me', { token: last.access_token, json: { pwd: 'trips-password-3' } }));
    const deletionMail = await app.smtp.waitFor((message) => message.to === user.email && message.subject.includes('delete') && app.smtp.messages.indexOf(message) >= deletionBefore, 10_000);
    await check('deletion', () => app.call('DELETE', '/acc/me', { token: last.access_token, json: { pwd: 'trips-password-3', email_code: codeIn(deletionMail) } }));
    process.stdout.write(`# round trips: ${JSON.stringify(measured)}\n`);
    assert.deepEqual(Object.keys(measured).sort(), Object.keys(budgets).sort(), 'every path of the table was measured');
  });
});

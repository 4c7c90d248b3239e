import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase } from '../helpers/database.ts';
import { startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

// Instances share the throttles, cooldowns and caps in the database, but each reads its own
// clock (docs/operations.md: NTP is required). What a skew of 30 s between two instances does:
// a wait can end up to 30 s early at the instance that is ahead, and no more; alternating
// between the two never refills a budget faster than time passes.

const perHour = 360; // 0.1 guess a second: a skew of 30 s would be worth 3 guesses at each switch.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let behind: TestService;
let ahead: TestService;
before(async () => {
  database = await createTestDatabase();
  const env = { LOGIN_FAILURES_PER_HOUR: String(perHour), TRUST_PROXY: '1' };
  behind = await startTestService({ databaseUrl: database.url, env });
  ahead = await startTestService({ databaseUrl: database.url, env });
  ahead.clock.advance(30);
});
after(async () => {
  await behind.stop();
  await ahead.stop();
  await database.drop();
});

let client = 0;
/** A wrong guess from an address of its own, so that only the identifier's budget counts. */
const guess = (app: TestService, username: string) => {
  client += 1;
  return app.call('POST', '/auth/token', {
    json: { grant_type: 'password', username, password: 'wrong' },
    headers: { 'x-forwarded-for': `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}` },
  });
};

describe('two instances whose clocks differ by 30 s', () => {
  it('check no more guesses, alternating, than the hourly budget and the real time that passed', async () => {
    const { name } = uniqueUser('skew');
    const started = Date.now();
    let checked = 0;
    for (let i = 0; i < perHour * 2; i += 1) {
      const response = await guess(i % 2 === 0 ? behind : ahead, name);
      if (response.status === 429) break;
      assert.equal(response.status, 400, response.text);
      checked += 1;
    }
    const refilledMeanwhile = Math.ceil(((Date.now() - started) / 1000) * (perHour / 3600)) + 1;
    assert.ok(checked <= perHour + refilledMeanwhile, `${checked} guesses checked, more than ${perHour} + ${refilledMeanwhile}`);
    assert.ok(checked >= perHour, `${checked}: the budget is not cut either`);
  });
});

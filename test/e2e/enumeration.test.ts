import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { stopWallClock } from '../helpers/clock.ts';
import { seen, type HttpResult } from '../helpers/http.ts';
import { requestCode, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

// Sequences of requests, as a stranger would send them, against three addresses: one with no
// account, one with a pending registration and one with an active account. Every answer of
// every step must be the same for all three: status, headers (less Date and X-Request-Id) and body.

let app: TestService;
before(async () => {
  // Pending registrations must outlive the days these sequences skip to start from fresh quotas.
  app = await startTestService({
    env: {
      REG_CODE_TTL: String(7 * 24 * 3600),
      FEATURES: 'second-factor,passkeys,email-change,common-passwords,sign-in-notices,export,email-code',
    },
  });
});
after(async () => {
  await app.stop();
});

type Step = { advance: number } | ((email: string) => Promise<HttpResult[]>);

/** Three addresses in the three states, with quotas as fresh as a never-used address's. */
async function threeAddresses(): Promise<Record<'none' | 'pending' | 'active', string>> {
  const active = uniqueUser('active');
  const code = await requestCode(app, active);
  assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204);
  const pending = uniqueUser('pending');
  await requestCode(app, pending);
  app.clock.advance(24 * 3600 + 1);
  return { none: uniqueUser('none').email, pending: pending.email, active: active.email };
}

/**
 * Runs the steps for the three addresses side by side and compares every answer. The service's
 * time moves only by the steps' advances: a Retry-After counts whole seconds from each address's
 * own earlier requests, and on a busy machine the real time between the three addresses' requests
 * crossed a second boundary (85789 against 85790). Stopped, the answers must be equal to the second.
 */
async function assertAlike(steps: Step[]): Promise<string[]> {
  const restartWallClock = stopWallClock();
  try {
    const addresses = await threeAddresses();
    const transcript: string[] = [];
    for (const [index, step] of steps.entries()) {
      if (typeof step !== 'function') {
        app.clock.advance(step.advance);
        continue;
      }
      const answers: Record<string, string[]> = {};
      for (const [state, email] of Object.entries(addresses)) answers[state] = (await step(email)).map(seen).sort();
      assert.deepEqual(answers.pending, answers.none, `step ${index}: pending vs none`);
      assert.deepEqual(answers.active, answers.none, `step ${index}: active vs none`);
      transcript.push(...answers.none!.map((answer) => answer.split('\n')[0]!));
    }
    return transcript;
  } finally {
    restartWallClock();
  }
}

const register = (email: string, name = uniqueUser('seq').name) => app.call('POST', '/acc/reg/code', { json: { name, email, pwd: 'sequence-password' } });
const reset = (email: string) => app.call('POST', '/acc/pwd/code', { json: { email } });
const signInCode = (email: string) => app.call('POST', '/auth/code', { json: { email } });
const once = (send: (email: string) => Promise<HttpResult>) => async (email: string) => [await send(email)];
const burst = (send: (email: string) => Promise<HttpResult>) => (email: string) => Promise.all(Array.from({ length: 6 }, () => send(email)));

for (const [endpoint, send] of [
  ['POST /acc/reg/code', register],
  ['POST /acc/pwd/code', reset],
  ['POST /auth/code', signInCode],
] as const) {
  describe(`${endpoint} answers every state of an address alike, over sequences`, () => {
    it('a repeat at once, then after the cooldown', async () => {
      const statuses = await assertAlike([once(send), once(send), { advance: 30 }, once(send), { advance: 31 }, once(send)]);
      assert.deepEqual(statuses, ['204', '429', '429', '204']);
    });

    it('a burst of parallel requests', async () => {
      const statuses = await assertAlike([burst(send)]);
      assert.deepEqual(statuses, ['204', '429', '429', '429', '429', '429']);
    });

    it('another letter case of the same address', async () => {
      const statuses = await assertAlike([once(send), once((email) => send(email.toUpperCase())), { advance: 61 }, once((email) => send(email.toUpperCase()))]);
      assert.deepEqual(statuses, ['204', '429', '204']);
    });

    it('past the daily cap, and after it frees', async () => {
      const steps: Step[] = [];
      for (let i = 0; i < 10; i += 1) steps.push(once(send), { advance: 61 });
      steps.push(once(send), { advance: 24 * 3600 - 10 * 61 + 1 }, once(send));
      const statuses = await assertAlike(steps);
      assert.deepEqual(statuses, [...Array(10).fill('204'), '429', '204']);
    });
  });
}

describe('POST /acc/reg/code answers every state alike over names', () => {
  it('another name for the same address, and a taken name', async () => {
    const taken = uniqueUser('taken');
    await requestCode(app, taken);
    const statuses = await assertAlike([
      once((email) => register(email)),
      once((email) => register(email)),
      { advance: 61 },
      once((email) => register(email, taken.name)),
      once((email) => register(email)),
      once((email) => register(email, taken.name)),
    ]);
    assert.deepEqual(statuses, ['204', '429', '409', '204', '409']);
  });

  it('a name sent with the address, then the same name with another address', async () => {
    // The name a request holds must not depend on what the address holds (outside testers' finding).
    const nameFor = (email: string) => `held-${createHash('sha256').update(email).digest('hex').slice(0, 12)}`;
    const statuses = await assertAlike([
      once((email) => register(email, nameFor(email))),
      once((email) => register(`other-${nameFor(email)}@example.org`, nameFor(email))),
      { advance: 61 },
      once((email) => register(email, nameFor(email))),
    ]);
    assert.deepEqual(statuses, ['204', '409', '204']);
  });
});

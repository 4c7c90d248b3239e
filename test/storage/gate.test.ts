import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createGate, type GateBounds } from '../../src/storage/gate.ts';

describe('createGate', () => {
  const bounds = (depth: number, maxQueued: number, maxWaitMs: number, more: Partial<GateBounds> = {}): GateBounds =>
    ({ depth, maxQueued, maxWaitMs, maxHoldMs: 0, onStuck: () => {}, ...more });
  const hold = () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    return { held, release };
  };

  it('runs at most `connections` × `depth` at once and hands a freed slot to the first waiter', async () => {
    const gate = createGate(2, bounds(1, 10, 1_000));
    const first = hold();
    const second = hold();
    const order: string[] = [];
    const a = gate.run(() => first.held.then(() => order.push('a')));
    const b = gate.run(() => second.held.then(() => order.push('b')));
    const c = gate.run(async () => order.push('c'));
    assert.deepEqual(gate.stats(), { running: 2, queued: 1 });
    first.release();
    await a;
    await c;
    second.release();
    await b;
    assert.deepEqual(order, ['a', 'c', 'b']);
    assert.deepEqual(gate.stats(), { running: 0, queued: 0 });
  });

  it('refuses at once when the queue is full, and after maxWaitMs in it, with DATABASE_BUSY', async () => {
    const gate = createGate(1, bounds(1, 1, 50));
    const blocker = hold();
    const running = gate.run(() => blocker.held);
    const waiting = gate.run(async () => 'never');
    await assert.rejects(gate.run(async () => 'full'), (error: { code?: string; message: string }) => error.code === 'DATABASE_BUSY' && /full/.test(error.message));
    const started = performance.now();
    await assert.rejects(waiting, (error: { code?: string }) => error.code === 'DATABASE_BUSY');
    assert.ok(performance.now() - started < 1_000);
    blocker.release();
    await running;
    assert.equal(await gate.run(async () => 'free again'), 'free again');
  });

  it('frees the slot of a task that fails', async () => {
    const gate = createGate(1, bounds(1, 1, 1_000));
    await assert.rejects(gate.run(async () => Promise.reject(new Error('boom'))), /boom/);
    assert.deepEqual(gate.stats(), { running: 0, queued: 0 });
  });

  it('spreads work over the least busy connections, up to `depth` each', async () => {
    const gate = createGate(2, bounds(2, 10, 1_000));
    const blocker = hold();
    const given: number[] = [];
    const tasks = Array.from({ length: 5 }, () => gate.run(async (connection) => {
      given.push(connection);
      await blocker.held;
    }));
    assert.deepEqual(given.sort(), [0, 0, 1, 1]);
    assert.deepEqual(gate.stats(), { running: 4, queued: 1 });
    blocker.release();
    await Promise.all(tasks);
    assert.equal(given.length, 5);
    assert.deepEqual(gate.stats(), { running: 0, queued: 0 });
  });

  it("keeps a transaction's connection to it alone until it ends", async () => {
    const gate = createGate(2, bounds(3, 10, 1_000));
    const transaction = hold();
    const queries = hold();
    let held = -1;
    const exclusive = gate.run(async (connection) => {
      held = connection;
      await transaction.held;
    }, 'transaction');
    const given: number[] = [];
    const tasks = Array.from({ length: 4 }, () => gate.run(async (connection) => {
      given.push(connection);
      await queries.held;
    }));
    assert.deepEqual(given, [1 - held, 1 - held, 1 - held], 'three on the other connection; the fourth waits');
    assert.deepEqual(gate.stats(), { running: 4, queued: 1 });
    transaction.release();
    await exclusive;
    assert.deepEqual(given, [1 - held, 1 - held, 1 - held, held], 'then the freed one');
    queries.release();
    await Promise.all(tasks);
  });

  it('fails work that holds its connection past maxHoldMs with DATABASE_STUCK, frees it, and names the connection', async () => {
    const stuck: number[] = [];
    const gate = createGate(2, bounds(1, 1, 1_000, { maxHoldMs: 50, onStuck: (connection) => stuck.push(connection) }));
    const never = hold();
    let given = -1;
    const work = gate.run((connection) => ((given = connection), never.held));
    await assert.rejects(work, (error: { code?: string }) => error.code === 'DATABASE_STUCK');
    assert.deepEqual(stuck, [given]);
    assert.deepEqual(gate.stats(), { running: 0, queued: 0 });
    assert.equal(await gate.run(async () => 'in time'), 'in time');
    assert.deepEqual(stuck, [given], 'work that ends in time is not stuck');
  });

  it('bounds no hold with maxHoldMs 0, nor a reservation', async () => {
    let stuck = 0;
    for (const [maxHoldMs, kind] of [[0, 'query'], [20, 'reservation']] as const) {
      const gate = createGate(1, bounds(1, 1, 1_000, { maxHoldMs, onStuck: () => (stuck += 1) }));
      const slow = hold();
      const running = gate.run(() => slow.held.then(() => 'late'), kind);
      // A timer of the gate's, had it set one, would have been due before this one.
      await new Promise((resolve) => setTimeout(resolve, 40));
      slow.release();
      assert.equal(await running, 'late');
    }
    assert.equal(stuck, 0);
  });
});

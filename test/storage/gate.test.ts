import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createGate } from '../../src/storage/gate.ts';

describe('createGate', () => {
  const bounds = (maxQueued: number, maxWaitMs: number) => ({ maxQueued, maxWaitMs, maxHoldMs: 0, onStuck: () => {} });
  const hold = () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    return { held, release };
  };

  it('runs at most `slots` at once and hands a freed slot to the first waiter', async () => {
    const gate = createGate(2, bounds(10, 1_000));
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
    const gate = createGate(1, bounds(1, 50));
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
    const gate = createGate(1, bounds(1, 1_000));
    await assert.rejects(gate.run(async () => Promise.reject(new Error('boom'))), /boom/);
    assert.deepEqual(gate.stats(), { running: 0, queued: 0 });
  });

  it('fails work that holds its slot past maxHoldMs with DATABASE_STUCK, frees the slot, and says so once', async () => {
    let stuck = 0;
    const gate = createGate(1, { maxQueued: 1, maxWaitMs: 1_000, maxHoldMs: 50, onStuck: () => (stuck += 1) });
    const never = hold();
    await assert.rejects(gate.run(() => never.held), (error: { code?: string }) => error.code === 'DATABASE_STUCK');
    assert.equal(stuck, 1);
    assert.deepEqual(gate.stats(), { running: 0, queued: 0 });
    assert.equal(await gate.run(async () => 'in time'), 'in time');
    assert.equal(stuck, 1, 'work that ends in time is not stuck');
  });

  it('bounds no hold with maxHoldMs 0', async () => {
    let stuck = 0;
    const gate = createGate(1, { maxQueued: 1, maxWaitMs: 1_000, maxHoldMs: 0, onStuck: () => (stuck += 1) });
    const slow = hold();
    const running = gate.run(() => slow.held.then(() => 'late'));
    // A timer of the gate's, had it set one, would have been due before this one.
    await new Promise((resolve) => setTimeout(resolve, 20));
    slow.release();
    assert.equal(await running, 'late');
    assert.equal(stuck, 0);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLimiter, OverloadedError } from '../src/support/concurrency.ts';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
};

describe('createLimiter', () => {
  it('runs at most `concurrency` tasks at once, the rest in arrival order', async () => {
    const limiter = createLimiter(2, 10);
    const gates = Array.from({ length: 4 }, deferred);
    const started: number[] = [];
    const runs = gates.map((gate, index) => limiter.run(async () => (started.push(index), await gate.promise, index)));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1]);
    assert.deepEqual(limiter.stats(), { running: 2, queued: 2 });
    gates[1]!.resolve();
    await runs[1];
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1, 2]);
    for (const gate of gates) gate.resolve();
    assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3]);
    assert.deepEqual(limiter.stats(), { running: 0, queued: 0 });
  });

  it('refuses work past the queue bound with OverloadedError', async () => {
    const limiter = createLimiter(1, 1);
    const gate = deferred();
    const first = limiter.run(() => gate.promise);
    const second = limiter.run(async () => 'second');
    await assert.rejects(limiter.run(async () => 'third'), OverloadedError);
    gate.resolve();
    await first;
    assert.equal(await second, 'second');
  });

  it('refuses a task that waited too long when its turn comes', async () => {
    let clock = 0;
    const limiter = createLimiter(1, 5, 1_000, () => clock);
    const gate = deferred();
    const first = limiter.run(() => gate.promise);
    const stale = limiter.run(async () => 'stale');
    clock = 500;
    const fresh = limiter.run(async () => 'fresh');
    clock = 1_200;
    gate.resolve();
    await first;
    await assert.rejects(stale, OverloadedError);
    assert.equal(await fresh, 'fresh', 'waited 700 ms, under the bound');
    assert.deepEqual(limiter.stats(), { running: 0, queued: 0 });
  });

  it('frees its slot when a task fails', async () => {
    const limiter = createLimiter(1, 0);
    await assert.rejects(limiter.run(async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await limiter.run(async () => 'next'), 'next');
  });
});

describe('createLimiter lanes', () => {
  it('keeps a slot for interactive work and serves it first, however much bulk work waits', async () => {
    const limiter = createLimiter(2, 10);
    const gates = Array.from({ length: 6 }, deferred);
    const started: string[] = [];
    const task = (name: string, gate: { promise: Promise<void> }) => async () => (started.push(name), await gate.promise, name);
    const bulk = [0, 1, 2].map((index) => limiter.run(task(`bulk-${index}`, gates[index]!), 'bulk'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, ['bulk-0'], 'bulk work holds at most all slots but one');
    const signIn = limiter.run(task('interactive-0', gates[3]!), 'interactive');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, ['bulk-0', 'interactive-0'], 'interactive work takes the kept slot at once');
    const second = limiter.run(task('interactive-1', gates[4]!), 'interactive');
    gates[0]!.resolve();
    await bulk[0];
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, ['bulk-0', 'interactive-0', 'interactive-1'], 'a freed slot goes to waiting interactive work first');
    for (const gate of gates) gate.resolve();
    await Promise.all([...bulk, signIn, second]);
    assert.deepEqual(started.slice(3).sort(), ['bulk-1', 'bulk-2']);
  });

  it('bounds each lane\'s queue on its own', async () => {
    const limiter = createLimiter(1, 1);
    const gate = deferred();
    const running = limiter.run(() => gate.promise, 'bulk');
    const queuedBulk = limiter.run(async () => 'bulk', 'bulk');
    await assert.rejects(limiter.run(async () => 'bulk', 'bulk'), OverloadedError);
    const queuedInteractive = limiter.run(async () => 'interactive', 'interactive');
    gate.resolve();
    assert.deepEqual(await Promise.all([running, queuedInteractive, queuedBulk]), [undefined, 'interactive', 'bulk']);
  });
});

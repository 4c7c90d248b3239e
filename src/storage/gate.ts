/**
 * The bounded queue in front of the connection pool. The driver queues without bound and
 * without a deadline: under a slow database every request would wait for it, however long.
 * Here at most `slots` pieces of work (a query, or a whole transaction) hold a connection,
 * at most `maxQueued` wait, none longer than `maxWaitMs`; past either bound the work is
 * refused with DATABASE_BUSY, which the HTTP edge answers 503 with Retry-After.
 *
 * Work that holds its slot past `maxHoldMs` (0: no bound) is failed with DATABASE_STUCK and
 * its slot freed, and `onStuck` is told: the driver can keep a query forever on a connection
 * whose backend ended (docs/operations.md, "Driver defects"), and only a fresh pool ends it.
 */
export type Gate = {
  run<T>(task: () => PromiseLike<T>): Promise<T>;
  stats(): { running: number; queued: number };
};

type Waiter = { start: () => void; timer: NodeJS.Timeout };

export type GateBounds = { maxQueued: number; maxWaitMs: number; maxHoldMs: number; onStuck: () => void };

export function createGate(slots: number, bounds: GateBounds): Gate {
  const { maxQueued, maxWaitMs, maxHoldMs, onStuck } = bounds;
  let running = 0;
  const waiting: Waiter[] = [];

  const enter = (): Promise<void> | null => {
    if (running < slots && waiting.length === 0) {
      running += 1;
      return null;
    }
    if (waiting.length >= maxQueued) return Promise.reject(busy('the queue for a database connection is full'));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          clearTimeout(waiter.timer);
          resolve();
        },
        timer: setTimeout(() => {
          waiting.splice(waiting.indexOf(waiter), 1);
          reject(busy(`waited ${maxWaitMs} ms for a database connection`));
        }, maxWaitMs),
      };
      waiting.push(waiter);
    });
  };
  const leave = () => {
    const next = waiting.shift();
    // The slot passes straight to the next waiter, so that no newcomer overtakes it.
    if (next === undefined) running -= 1;
    else next.start();
  };

  return {
    async run(task) {
      const entered = enter();
      if (entered !== null) await entered;
      let timer: NodeJS.Timeout | undefined;
      const stuck = () => new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          const error = new Error(`held a database connection over ${maxHoldMs} ms`);
          reject(Object.assign(error, { code: 'DATABASE_STUCK' }));
          onStuck();
        }, maxHoldMs);
      });
      try {
        return await (maxHoldMs > 0 ? Promise.race([task(), stuck()]) : task());
      } finally {
        clearTimeout(timer);
        leave();
      }
    },
    stats: () => ({ running, queued: waiting.length }),
  };
}

function busy(message: string): Error {
  return Object.assign(new Error(message), { code: 'DATABASE_BUSY' });
}

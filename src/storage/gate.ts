/**
 * The bounded queue in front of the connections. The driver queues without bound and without a
 * deadline: under a slow database every request would wait for it, however long. Here each
 * piece of work (a query, or a whole transaction) is given one of `connections` connections,
 * by index: the least busy one that holds fewer than `depth` pieces and no transaction. A
 * transaction keeps its connection to itself until it ends (it starts behind the queries
 * already sent there, at most depth - 1). At most `maxQueued` wait, none longer than
 * `maxWaitMs`; past either bound the work is refused with DATABASE_BUSY, which the HTTP edge
 * answers 503 with Retry-After.
 */
export type Gate = {
  run<T>(task: (connection: number) => PromiseLike<T>, exclusive?: boolean): Promise<T>;
  stats(): { running: number; queued: number };
};

type Waiter = { exclusive: boolean; start: (connection: number) => void; timer: NodeJS.Timeout };

export function createGate(connections: number, depth: number, maxQueued: number, maxWaitMs: number): Gate {
  const load = new Array<number>(connections).fill(0);
  const held = new Array<boolean>(connections).fill(false);
  const waiting: Waiter[] = [];

  /** The least busy connection that can take more work, or -1. */
  const free = (): number => {
    let best = -1;
    for (let connection = 0; connection < connections; connection += 1) {
      if (held[connection] || load[connection]! >= depth) continue;
      if (best === -1 || load[connection]! < load[best]!) best = connection;
    }
    return best;
  };
  const take = (connection: number, exclusive: boolean) => {
    load[connection]! += 1;
    if (exclusive) held[connection] = true;
  };
  /** A connection for the work, taken for it at once or when a waiter's turn comes. */
  const enter = (exclusive: boolean): Promise<number> | number => {
    const connection = waiting.length === 0 ? free() : -1;
    if (connection !== -1) {
      take(connection, exclusive);
      return connection;
    }
    if (waiting.length >= maxQueued) return Promise.reject(busy('the queue for a database connection is full'));
    return new Promise<number>((resolve, reject) => {
      const waiter: Waiter = {
        exclusive,
        start: (granted) => {
          clearTimeout(waiter.timer);
          resolve(granted);
        },
        timer: setTimeout(() => {
          waiting.splice(waiting.indexOf(waiter), 1);
          reject(busy(`waited ${maxWaitMs} ms for a database connection`));
        }, maxWaitMs),
      };
      waiting.push(waiter);
    });
  };
  const leave = (connection: number, exclusive: boolean) => {
    load[connection]! -= 1;
    if (exclusive) held[connection] = false;
    // Waiters are served in order, so that no newcomer overtakes them.
    for (let next = free(); next !== -1 && waiting.length > 0; next = free()) {
      const waiter = waiting.shift()!;
      // Taken now, not when the waiter resumes: the next waiter must see it.
      take(next, waiter.exclusive);
      waiter.start(next);
    }
  };

  return {
    async run(task, exclusive = false) {
      const entered = enter(exclusive);
      const connection = typeof entered === 'number' ? entered : await entered;
      try {
        return await task(connection);
      } finally {
        leave(connection, exclusive);
      }
    },
    stats: () => ({ running: load.reduce((sum, count) => sum + count, 0), queued: waiting.length }),
  };
}

function busy(message: string): Error {
  return Object.assign(new Error(message), { code: 'DATABASE_BUSY' });
}

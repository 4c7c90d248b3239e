/**
 * The bounded queue in front of the connections. The driver queues without bound and without a
 * deadline: under a slow database every request would wait for it, however long. Here each
 * piece of work (a query, or a whole transaction) is given one of `connections` connections,
 * by index: the least busy one that holds fewer than `depth` pieces and no transaction. A
 * transaction (or a reservation) has its connection to itself until it ends; it starts behind
 * the queries already sent there, at most depth - 1. At most `maxQueued` wait, none longer
 * than `maxWaitMs`; past either bound the work is refused with DATABASE_BUSY, which the HTTP
 * edge answers 503 with Retry-After.
 *
 * Work that holds its connection past `maxHoldMs` (0: no bound) is failed with DATABASE_STUCK,
 * its place freed, and `onStuck` told the connection and when the work began there: the driver
 * can keep queries forever on a connection whose backend ended (docs/operations.md, "Driver
 * defects"), and only a fresh connection ends them. A reservation is not bounded: its holder
 * sends statements on it as long as it needs, each bounded by the statement timeout.
 */
export type Gate = {
  run<T>(task: (connection: number) => PromiseLike<T>, kind?: WorkKind): Promise<T>;
  stats(): { running: number; queued: number };
};

/** 'query': shares its connection; 'transaction' and 'reservation': have it to themselves. */
export type WorkKind = 'query' | 'transaction' | 'reservation';

export type GateBounds = {
  depth: number; maxQueued: number; maxWaitMs: number; maxHoldMs: number;
  onStuck: (connection: number, since: number) => void;
};

type Waiter = { exclusive: boolean; start: (connection: number) => void; timer: NodeJS.Timeout };

export function createGate(connections: number, bounds: GateBounds): Gate {
  const { depth, maxQueued, maxWaitMs, maxHoldMs, onStuck } = bounds;
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
    async run(task, kind = 'query') {
      const exclusive = kind !== 'query';
      const entered = enter(exclusive);
      const connection = typeof entered === 'number' ? entered : await entered;
      const since = performance.now();
      let timer: NodeJS.Timeout | undefined;
      const stuck = () => new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          const error = new Error(`held a database connection over ${maxHoldMs} ms`);
          reject(Object.assign(error, { code: 'DATABASE_STUCK' }));
          onStuck(connection, since);
        }, maxHoldMs);
      });
      try {
        const bounded = maxHoldMs > 0 && kind !== 'reservation';
        return await (bounded ? Promise.race([task(connection), stuck()]) : task(connection));
      } finally {
        clearTimeout(timer);
        leave(connection, exclusive);
      }
    },
    stats: () => ({ running: load.reduce((sum, count) => sum + count, 0), queued: waiting.length }),
  };
}

function busy(message: string): Error {
  return Object.assign(new Error(message), { code: 'DATABASE_BUSY' });
}

/** Raised when the work queue is full; the HTTP layer answers 503 with Retry-After. */
export class OverloadedError extends Error {
  override name = 'OverloadedError';
}

/**
 * `interactive`: a user waiting to get in or to secure the account (sign-in, password change
 * and reset, deletion). `bulk`: registration, which anyone can send in floods.
 */
export type Lane = 'interactive' | 'bulk';

export type Limiter = {
  /** Runs `task` when a slot of its lane is free; throws OverloadedError if the lane's queue is full. */
  run<T>(task: () => Promise<T>, lane?: Lane): Promise<T>;
  /** Tasks running and waiting, for metrics. */
  stats(): { running: number; queued: number };
};

type Waiter = { lane: Lane; since: number; start: () => void; refuse: (error: Error) => void };

/**
 * At most `concurrency` tasks at once, and at most `maxQueued` waiting in each lane, in arrival
 * order. Bounding both keeps memory bounded under any load: scrypt takes 32 MiB per call.
 * Fairness: bulk tasks may hold all slots but one, and a freed slot goes to a waiting
 * interactive task first, so that a flood of registrations cannot keep the owner of an
 * account from signing in or changing a password. A task that waited longer than `maxWaitMs`
 * is refused when its turn comes, because under a flood its client would wait longer still.
 * With `concurrency` 1 the one slot may go to bulk work, and an interactive task may then run
 * beside it: at most two tasks at once.
 */
export function createLimiter(
  concurrency: number, maxQueued: number, maxWaitMs = Infinity, now: () => number = () => performance.now(),
): Limiter {
  const bulkSlots = Math.max(1, concurrency - 1);
  const running = { interactive: 0, bulk: 0 };
  const waiting: Record<Lane, Waiter[]> = { interactive: [], bulk: [] };
  const total = () => running.interactive + running.bulk;
  // With one slot (HASH_CONCURRENCY=1) bulk work may hold it; an interactive task then starts
  // beside it, so that registrations never take the only slot from sign-in.
  const mayStart = (lane: Lane) =>
    lane === 'interactive'
      ? total() < concurrency || running.interactive === 0
      : total() < concurrency && running.bulk < bulkSlots;

  const startWaiting = () => {
    for (const lane of ['interactive', 'bulk'] as const) {
      while (waiting[lane].length > 0 && mayStart(lane)) {
        const next = waiting[lane].shift()!;
        if (now() - next.since > maxWaitMs) {
          next.refuse(new OverloadedError('waited too long for a password hashing slot'));
          continue;
        }
        running[lane] += 1;
        next.start();
      }
    }
  };

  return {
    async run(task, lane = 'interactive') {
      if (mayStart(lane) && waiting.interactive.length === 0 && (lane === 'interactive' || waiting.bulk.length === 0)) {
        running[lane] += 1;
      } else {
        if (waiting[lane].length >= maxQueued) throw new OverloadedError('the password hashing queue is full');
        await new Promise<void>((start, refuse) => waiting[lane].push({ lane, since: now(), start, refuse }));
      }
      try {
        return await task();
      } finally {
        running[lane] -= 1;
        startWaiting();
      }
    },
    stats: () => ({ running: total(), queued: waiting.interactive.length + waiting.bulk.length }),
  };
}

/** Raised when the work queue is full; the HTTP layer answers 503 with Retry-After. */
export class OverloadedError extends Error {
  override name = 'OverloadedError';
}

export type Limiter = {
  /** Runs `task` once fewer than `concurrency` tasks run; throws OverloadedError if the queue is full. */
  run<T>(task: () => Promise<T>): Promise<T>;
  /** Tasks running and waiting, for metrics. */
  stats(): { running: number; queued: number };
};

/**
 * At most `concurrency` tasks at once and at most `maxQueued` waiting behind them, in arrival
 * order. Bounding both keeps memory bounded under any load: scrypt takes 32 MiB per call.
 * A task that waited longer than `maxWaitMs` is refused when its turn comes, because under
 * a flood its client would wait longer still; the flood slows every hash on a busy machine.
 */
export function createLimiter(concurrency: number, maxQueued: number, maxWaitMs = Infinity, now: () => number = () => performance.now()): Limiter {
  let running = 0;
  const waiting: Array<{ since: number; resolve: () => void; reject: (error: Error) => void }> = [];
  const release = () => {
    running -= 1;
    for (let next = waiting.shift(); next !== undefined; next = waiting.shift()) {
      if (now() - next.since > maxWaitMs) {
        next.reject(new OverloadedError('waited too long for a password hashing slot'));
        continue;
      }
      running += 1;
      next.resolve();
      return;
    }
  };
  return {
    async run(task) {
      if (running >= concurrency) {
        if (waiting.length >= maxQueued) throw new OverloadedError('the password hashing queue is full');
        await new Promise<void>((resolve, reject) => waiting.push({ since: now(), resolve, reject }));
      } else {
        running += 1;
      }
      try {
        return await task();
      } finally {
        release();
      }
    },
    stats: () => ({ running, queued: waiting.length }),
  };
}

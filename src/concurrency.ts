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
 */
export function createLimiter(concurrency: number, maxQueued: number): Limiter {
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    running -= 1;
    const next = waiting.shift();
    if (next !== undefined) {
      running += 1;
      next();
    }
  };
  return {
    async run(task) {
      if (running >= concurrency) {
        if (waiting.length >= maxQueued) throw new OverloadedError('the password hashing queue is full');
        await new Promise<void>((resolve) => waiting.push(resolve));
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

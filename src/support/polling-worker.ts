import { describeError, type Logger } from '../telemetry/log.ts';

export type PollingWorker = {
  /** Asks the worker to look for due work now, such as right after a commit. */
  wake(): void;
  /**
   * The same, after a random delay of up to `wakeJitterMs`. For work whose doing must not be
   * timed from the request that caused it: the work makes the service busier for a moment, and
   * a stranger who times a request right after a reset request would otherwise see whether that
   * address got mail (or, for the request resolver, more rows), that is whether it has an account.
   */
  wakeLater(): void;
  /** Resolves once no item is under way and none will start. */
  stop(): Promise<void>;
};

/** What the owner of a worker (service.ts) sets for its loop. */
export type PollingSettings = {
  log: Logger;
  /** Told of errors that stopped a round, such as a database that went away. */
  onError?: (error: unknown) => void;
  pollMs?: number;
  wakeJitterMs?: number;
};

export type PollingWorkerOptions = PollingSettings & {
  /** Handles one due item; false when none is due. */
  next: () => Promise<boolean>;
  /** Runs after each round, also one that failed partway, told how many items it handled. */
  afterRound?: (handled: number) => void | Promise<void>;
  /** The warning logged when a round fails. */
  failureMessage: string;
};

/**
 * The loop behind the outbox, the webhook deliveries and the request resolver: handles items one
 * at a time until none is due, when woken and every `pollMs` (for work that another instance
 * queued, or that a stop or a database outage left behind). One round runs at a time; a wake
 * during a round is served by that round or by one more.
 */
export function createPollingWorker(options: PollingWorkerOptions): PollingWorker {
  const { log, pollMs = 5_000, wakeJitterMs = 2_000 } = options;
  let running: Promise<void> | null = null;
  let wanted = false;
  let stopped = false;

  const round = async (): Promise<void> => {
    let handled = 0;
    try {
      // A wake before an item is handled is served by the next look for one.
      while (!stopped && (await options.next())) {
        handled += 1;
        wanted = false;
      }
    } finally {
      await options.afterRound?.(handled);
    }
  };

  const run = (): void => {
    if (stopped) return;
    wanted = true;
    running ??= (async () => {
      while (wanted && !stopped) {
        wanted = false;
        try {
          await round();
        } catch (error) {
          // Most often the database is away; the next poll tries again.
          log.warn(options.failureMessage, describeError(error));
          options.onError?.(error);
        }
      }
    })().finally(() => {
      running = null;
      // A wake that arrived while the loop was finishing must not wait for the next poll.
      if (wanted) run();
    });
  };

  const timer = setInterval(run, pollMs);
  timer.unref();
  return {
    wake: run,
    wakeLater() {
      setTimeout(run, Math.random() * wakeJitterMs).unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

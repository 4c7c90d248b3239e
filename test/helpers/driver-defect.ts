import { isUncaughtDriverDefect } from '../../src/storage/db.ts';

type Handler = (...args: unknown[]) => void;

/**
 * For a test whose service runs in this process: does what main.ts does with the driver's
 * defects that no caller can catch (db.ts), hands them to the pool, instead of letting the test
 * runner's own handlers count them as failures of the test. A process without a handler of
 * unhandled rejections, as main.ts is, meets a rejection as an uncaught exception; the runner
 * has one, so both kinds are taken here, and anything else goes on to the runner's handlers.
 * Returns the function that puts the runner's handlers back.
 */
export function handleDriverDefects(noteDatabaseFailure: (error: unknown) => void): () => void {
  const events = ['uncaughtException', 'unhandledRejection'] as const;
  const emitter = process as unknown as {
    listeners(event: string): Handler[]; removeAllListeners(event: string): void;
    on(event: string, handler: Handler): void; off(event: string, handler: Handler): void;
  };
  const taken = events.map((event) => {
    const runners = emitter.listeners(event);
    const handler: Handler = (error, ...rest) => {
      if (isUncaughtDriverDefect(error)) return noteDatabaseFailure(error);
      for (const runner of runners) runner(error, ...rest);
    };
    emitter.removeAllListeners(event);
    emitter.on(event, handler);
    return { event, runners, handler };
  });
  return () => {
    for (const { event, runners, handler } of taken) {
      emitter.off(event, handler);
      for (const runner of runners) emitter.on(event, runner);
    }
  };
}

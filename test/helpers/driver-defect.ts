import { isDriverWriteDefect } from '../../src/storage/db.ts';

/**
 * For a test whose service runs in this process: does what main.ts does with the driver's
 * uncatchable write defect (db.ts), hands it to the pool, instead of letting the test runner's
 * own handler count it as a failure of the test; that handler steps aside meanwhile. Anything
 * else is thrown on. Returns the function that puts the runner's handlers back.
 */
export function handleDriverDefects(noteDatabaseFailure: (error: unknown) => void): () => void {
  const runnerHandlers = process.listeners('uncaughtException');
  const onDefect = (error: Error) => {
    if (!isDriverWriteDefect(error)) throw error;
    noteDatabaseFailure(error);
  };
  process.removeAllListeners('uncaughtException');
  process.on('uncaughtException', onDefect);
  return () => {
    process.off('uncaughtException', onDefect);
    for (const handler of runnerHandlers) process.on('uncaughtException', handler);
  };
}

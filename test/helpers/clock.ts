import { mock } from 'node:test';

/**
 * Stops `Date.now` in this process at its current value until the returned function is called.
 * The service that startTestService runs here reads its time through the test clock, which adds
 * its offset to `Date.now`, and the in-memory rate limiters read `Date.now` itself: stopped,
 * time moves only by `clock.advance`, so a count of seconds in an answer (Retry-After) is the
 * same however long a busy machine takes between two requests. Timers still run, and
 * waitUntil keeps its deadline on the monotonic clock.
 */
export function stopWallClock(): () => void {
  const at = Date.now();
  const stopped = mock.method(Date, 'now', () => at);
  return () => stopped.mock.restore();
}

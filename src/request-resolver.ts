import type { Sql } from './storage/db.ts';
import { createPollingWorker, type PollingSettings } from './support/polling-worker.ts';
import type { Mailer } from './mail/templates.ts';
import { resolveNextRegistrationRequest } from './features/registration/requests.ts';
import { resolveNextResetRequest } from './features/password/reset-requests.ts';
import { resolveNextSignInCodeRequest } from './features/email-code/store.ts';

export type RequestResolverOptions = PollingSettings & {
  sql: Sql;
  mailer: Mailer;
  resetCodeTtlSeconds: number;
  /** Told after requests were resolved, so that their mail goes out. */
  onResolved: () => void;
};

export type RequestResolver = {
  /**
   * Resolves waiting requests after a random delay of up to `wakeJitterMs`. Resolving an address
   * with an account writes more than one without, and makes the service busy for a moment: the
   * delay keeps that moment from being timed from the request.
   */
  wakeLater(): void;
  stop(): Promise<void>;
};

/**
 * The worker behind the requests that take an address (features/registration/requests.ts,
 * features/password/reset-requests.ts): those only record that they were asked, the same rows for every address,
 * and this resolves them, each in its own transaction. FOR UPDATE SKIP LOCKED lets several
 * instances share the work; it also polls, for requests that another instance recorded or that
 * a stop or a database outage left behind.
 */
export function createRequestResolver(options: RequestResolverOptions): RequestResolver {
  const { sql, mailer, log, onError, pollMs, wakeJitterMs } = options;
  const resolveNext = async () =>
    (await resolveNextRegistrationRequest(sql, mailer)) ||
    (await resolveNextResetRequest(sql, mailer, options.resetCodeTtlSeconds)) ||
    (await resolveNextSignInCodeRequest(sql, mailer));
  const afterRound = (resolved: number) => {
    if (resolved > 0) options.onResolved();
  };
  const failureMessage = 'resolving requests failed';
  const { wakeLater, stop } =
    createPollingWorker({ next: resolveNext, afterRound, log, failureMessage, onError, pollMs, wakeJitterMs });
  return { wakeLater, stop };
}

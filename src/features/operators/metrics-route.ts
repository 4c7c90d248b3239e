import { createHash } from 'node:crypto';
import { equalSecrets } from '../../core/constant-time.ts';
import { HttpError, problems } from '../../http/errors.ts';
import type { Handler, Reply } from '../../http/router.ts';
import { countWaitingAndFailed, type QueueCounts } from '../../support/queue.ts';
import type { Gauge } from '../../telemetry/metrics.ts';
import { bearerToken } from '../../core/auth.ts';

/**
 * GET /metrics: Prometheus text format.
 *
 * Without METRICS_TOKEN, /metrics is public, and a public scrape shows only what tells a
 * stranger nothing about single accounts and costs nothing per scrape: request counts, event
 * counters, the hashing queue, memory, and whether the pool sees the database up (no query).
 * Left out: gauges that move with single accounts (mail queued, sessions started), and the
 * latency histograms, whose sums give a stranger server-side timings without network jitter,
 * averaged over as many requests as it likes (security.md, "Metrics"). They, and the database
 * gauges read at scrape time, are shown only to a scraper that presents METRICS_TOKEN.
 */
export const getMetrics: Handler = async (ctx, deps) => {
  const detailed = deps.config.metricsToken !== null;
  if (detailed && !presentsToken(ctx.req.headers.authorization, deps.config.metricsToken!)) {
    const headers = { 'WWW-Authenticate': 'Bearer realm="metrics"' };
    throw new HttpError(problems.invalidToken, { detail: 'This endpoint needs the metrics token.', headers });
  }
  const hashing = deps.passwordLimiter.stats();
  const tracked = deps.rateLimiter?.size() ?? 0;
  const gauges: Gauge[] = [
    gauge('password_hash_running', 'scrypt computations running now.', hashing.running),
    gauge('password_hash_queued', 'scrypt computations waiting for a slot.', hashing.queued),
    gauge('rate_limit_tracked_addresses', 'Client addresses the rate limiter remembers.', tracked),
    gauge('process_resident_memory_bytes', 'Resident memory of this process.', process.memoryUsage.rss()),
    gauge('database_pool_max', 'Most database connections this instance opens.', deps.databaseConnections),
  ];
  const mail = deps.mailServerReachable();
  if (mail !== null) gauges.push(gauge('mail_server_up', '1 when the mail server answered lately.', Number(mail)));
  const databaseUp = (up: boolean) =>
    gauge('database_up', '1 when the database answers (a public scrape: as the pool last saw it).', up ? 1 : 0);
  if (!detailed) {
    gauges.push(databaseUp(deps.databaseUp()));
    return reply(deps.metrics.render(gauges, { latencies: false }));
  }
  // Counted by the webhook worker and the sweep, never by a scrape: no query per request.
  const webhooks = deps.webhookCounts();
  if (webhooks !== null) {
    gauges.push(gauge(
      'webhook_events',
      'Webhook events waiting to be delivered, and those given up on, as last counted (all instances).',
      queueSamples(webhooks),
    ));
  }
  try {
    const outbox = await countWaitingAndFailed(deps.sql, 'outbox');
    const connections = await deps.sql`
      SELECT coalesce(state, 'unknown') AS state, count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = ${deps.applicationName} GROUP BY 1`;
    const byState = ['active', 'idle', 'idle in transaction'].map((state) =>
      ({ labels: { state }, value: connections.find((row) => row.state === state)?.n ?? 0 }));
    const sessions = await deps.liveSessions.current();
    gauges.push(
      gauge(
        'outbox_messages', 'E-mail messages waiting to be sent, and those given up on (all instances).',
        queueSamples(outbox),
      ),
      gauge(
        'sessions_active', 'Live sessions of every account (all instances), as counted by the last minutely sweep.',
        sessions,
      ),
      // By state, it shows the outbox worker's transaction while a message is being sent.
      gauge(
        'database_pool_connections', "This instance's database connections, by state (the scrape's own is active).",
        byState,
      ),
      databaseUp(true),
    );
  } catch {
    gauges.push(databaseUp(false));
  }
  return reply(deps.metrics.render(gauges, { latencies: true }));
};

/** A queue's gauge samples, by state (countWaitingAndFailed). */
/** A gauge of one value, or of labelled samples. */
function gauge(name: string, help: string, value: number | Gauge['samples']): Gauge {
  return { name, help, samples: typeof value === 'number' ? [{ value }] : value };
}

function queueSamples(counts: QueueCounts): Gauge['samples'] {
  return (['pending', 'failed'] as const).map((state) => ({ labels: { state }, value: counts[state] }));
}

function reply(body: string): Reply {
  return { status: 200, body, headers: { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' } };
}

/** Compared as SHA-256 digests in constant time, so that neither length nor content leaks by timing. */
function presentsToken(header: string | undefined, token: string): boolean {
  const given = bearerToken(header) ?? '';
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return equalSecrets(digest(given), digest(token));
}

import type { Sql } from '../storage/db.ts';
/** Request counts and latencies, kept in memory and rendered in the Prometheus text format. */
export type Metrics = {
  observe(method: string, route: string, status: number, seconds: number): void;
  /** Counts one event of a named kind. */
  increment(counter: CounterName): void;
  /** The text exposition: what was observed (latencies only if asked), then the given gauges. */
  render(gauges: Gauge[], options?: { latencies: boolean }): string;
};

export type Gauge = {
  name: string; help: string; samples: Array<{ labels?: Record<string, string>; value: number }>;
};

const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const knownMethods = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);

/**
 * Requests of one method and route: their latencies, and a count per status. `counts[i]` counts
 * the latencies that fell between bucket i - 1 and bucket i, so that an observation adds 1 to
 * one bucket only; render() sums them into the cumulative counts the text format wants.
 */
type Series = { labels: string; counts: number[]; sum: number; count: number; statuses: Map<number, Counter> };
type Counter = { labels: string; value: number };

/** Every counter of events, with its help text. */
const counterHelp = {
  refresh_token_rotations_total: 'Refresh tokens rotated.',
  refresh_token_reuses_total: 'Spent refresh tokens presented again after the retry window; each revoked its session.',
  accounts_deleted_total: 'Accounts deleted by their owners.',
} as const;
export type CounterName = keyof typeof counterHelp;

export function createMetrics(): Metrics {
  // Every series is found by method, then route, and keeps its label text, made once.
  const series = new Map<string, Map<string, Series>>();
  /** In the order first seen, as the text lists them. */
  const requests: Counter[] = [];
  const latencies: Series[] = [];
  const counters = new Map<CounterName, number>(Object.keys(counterHelp).map((name) => [name as CounterName, 0]));
  const seriesOf = (method: string, route: string): Series => {
    let byRoute = series.get(method);
    if (byRoute === undefined) series.set(method, (byRoute = new Map()));
    let found = byRoute.get(route);
    if (found === undefined) {
      const counts = buckets.map(() => 0);
      found = { labels: labels({ method, route }), counts, sum: 0, count: 0, statuses: new Map() };
      byRoute.set(route, found);
      latencies.push(found);
    }
    return found;
  };
  return {
    increment(counter) {
      counters.set(counter, (counters.get(counter) ?? 0) + 1);
    },
    observe(method, route, status, seconds) {
      // Only bounded label values: an attacker's made-up methods and paths must not grow memory.
      const found = seriesOf(knownMethods.has(method) ? method : 'OTHER', route);
      let requestCount = found.statuses.get(status);
      if (requestCount === undefined) {
        requestCount = { labels: `${found.labels},${labels({ status: String(status) })}`, value: 0 };
        found.statuses.set(status, requestCount);
        requests.push(requestCount);
      }
      requestCount.value += 1;
      let index = 0;
      while (index < buckets.length && seconds > buckets[index]!) index += 1;
      // Past the last bucket only +Inf counts it, and that is `count`.
      if (index < buckets.length) found.counts[index]! += 1;
      found.sum += seconds;
      found.count += 1;
    },
    render(gauges, { latencies: withLatencies } = { latencies: true }) {
      const lines = [
        '# HELP http_requests_total Requests answered, by method, route and status.',
        '# TYPE http_requests_total counter',
      ];
      for (const { labels: key, value } of requests) lines.push(`http_requests_total{${key}} ${value}`);
      if (withLatencies) {
        lines.push(
          '# HELP http_request_duration_seconds Time to answer, by method and route.',
          '# TYPE http_request_duration_seconds histogram',
        );
      }
      for (const histogram of withLatencies ? latencies : []) {
        const key = histogram.labels;
        let cumulative = 0;
        buckets.forEach((bound, index) => {
          cumulative += histogram.counts[index]!;
          lines.push(`http_request_duration_seconds_bucket{${key},le="${bound}"} ${cumulative}`);
        });
        lines.push(`http_request_duration_seconds_bucket{${key},le="+Inf"} ${histogram.count}`);
        lines.push(`http_request_duration_seconds_sum{${key}} ${histogram.sum}`);
        lines.push(`http_request_duration_seconds_count{${key}} ${histogram.count}`);
      }
      for (const [name, value] of counters) {
        lines.push(`# HELP ${name} ${counterHelp[name]}`, `# TYPE ${name} counter`, `${name} ${value}`);
      }
      for (const gauge of gauges) {
        lines.push(`# HELP ${gauge.name} ${gauge.help}`, `# TYPE ${gauge.name} gauge`);
        for (const { labels: sampleLabels, value } of gauge.samples) {
          lines.push(`${gauge.name}${sampleLabels === undefined ? '' : `{${labels(sampleLabels)}}`} ${value}`);
        }
      }
      return `${lines.join('\n')}\n`;
    },
  };
}

function labels(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([name, value]) => `${name}="${value.replace(/[\\"\n]/g, (char) => (char === '\n' ? '\\n' : `\\${char}`))}"`)
    .join(',');
}

/**
 * Live sessions of every account, for the metrics: counted by the minutely sweep (`refresh`),
 * and by the first scrape if it comes before, never at each scrape. The count reads the index
 * entry of every live session: 35 to 65 ms for a million, in parallel workers.
 */
export function createLiveSessionCount(
  sql: Sql, clock: () => Date,
): { refresh(): Promise<number>; current(): Promise<number> } {
  let counted: number | null = null;
  const refresh = async () => {
    const [row] = await sql`SELECT count(*)::int AS n FROM sessions WHERE expires_at > ${clock()}`;
    return (counted = row!.n as number);
  };
  return { refresh, current: async () => counted ?? refresh() };
}

import { HttpError, problems } from './errors.ts';
import type { Handler } from './router.ts';

const readinessTimeoutMs = 2_000;

/** GET /healthz: the process serves requests. It touches nothing else, so a slow database cannot fail it. */
export const checkHealth: Handler = async () => ({ status: 200, body: { status: 'ok' } });

/** GET /readyz: the database answers within two seconds and holds every migration of this build. */
export const checkReadiness: Handler = async (_ctx, deps) => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), readinessTimeoutMs);
  });
  const current = deps.schemaCurrent().catch(() => false);
  const ready = await Promise.race([current, timeout]).finally(() => clearTimeout(timer));
  if (!ready) {
    const detail = 'The database is unreachable or not migrated.';
    throw new HttpError(problems.unavailable, { detail, headers: { 'Retry-After': '5' } });
  }
  return { status: 200, body: { status: 'ready' } };
};

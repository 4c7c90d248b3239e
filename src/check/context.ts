import type { Probe } from './probe.ts';

/** The operator's throwaway account: `--account NAME`, its password from CHECK_PASSWORD or standard input. */
export type Account = { name: string; password: string };

/** A session the check signed in; every one it makes is ended before the check finishes. */
export type Session = { accessToken: string; refreshToken: string };

/** What every check gets: the deployment's public URL, a paced client, and the operator's options. */
export type CheckContext = {
  url: URL;
  probe: Probe;
  account: Account | null;
  expectPublicMetrics: boolean;
  /** Sessions to end when the checks are done. */
  sessions: Session[];
};

/** Signs the account in (optionally with extra headers); the session, or null with the answer's status. */
export async function signIn(
  ctx: CheckContext,
  password: string,
  headers: Record<string, string> = {},
): Promise<Session | number> {
  const answer = await ctx.probe.request('POST', '/auth/token', {
    form: { grant_type: 'password', username: ctx.account!.name, password },
    headers,
  });
  if (answer.status !== 200) return answer.status;
  const session = {
    accessToken: String(answer.json?.access_token),
    refreshToken: String(answer.json?.refresh_token),
  };
  ctx.sessions.push(session);
  return session;
}

/** The claims of a JWT, read without checking it (the deployment checks; this only looks). */
export function claimsOf(token: string): Record<string, unknown> | null {
  const payload = token.split('.')[1];
  if (payload === undefined) return null;
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/**
 * Ends every session the check made, with the session's own access token (DELETE
 * /acc/me/sessions is not rate-limited, so cleanup works even after the rate-limit burst).
 */
export async function endSessions(ctx: CheckContext): Promise<void> {
  for (const session of ctx.sessions.splice(0)) {
    const sid = claimsOf(session.accessToken)?.sid;
    const headers = { Authorization: `Bearer ${session.accessToken}` };
    // A 401 is a session that is gone already (reuse detection ended it): nothing to clean.
    await ctx.probe.request('DELETE', `/acc/me/sessions/${String(sid)}`, { headers }).catch(() => null);
  }
}

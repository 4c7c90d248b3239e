import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { claimsOf, type CheckContext, type Session } from './context.ts';
import { fail, pass, skip, type Finding } from './report.ts';

type Forgery = { name: string; token: string };

const encode = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function hs256(header: Record<string, unknown>, claims: Record<string, unknown>, key: Buffer | string): string {
  const input = `${encode(header)}.${encode(claims)}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

/** Tokens no deployment may accept, each signed as an attacker can sign them. */
async function forgeries(ctx: CheckContext, session: Session | null): Promise<Forgery[]> {
  const now = Math.floor(Date.now() / 1000);
  const real = session === null ? null : claimsOf(session.accessToken);
  const claims = {
    iss: ctx.url.origin,
    sub: randomUUID(),
    sid: randomUUID(),
    jti: randomUUID(),
    iat: now,
    exp: now + 600,
    ...real,
  };
  const jwks = await ctx.probe.request('GET', '/.well-known/jwks.json');
  const key = Array.isArray(jwks.json?.keys) ? (jwks.json.keys[0] as Record<string, unknown>) : null;
  const guess = randomBytes(32);
  const list: Forgery[] = [
    { name: 'alg none', token: `${encode({ alg: 'none', typ: 'JWT' })}.${encode(claims)}.` },
    {
      name: 'wrong issuer',
      token: hs256({ alg: 'HS256', typ: 'JWT' }, { ...claims, iss: 'https://attacker.example' }, guess),
    },
    { name: 'wrong audience', token: hs256({ alg: 'HS256', typ: 'JWT' }, { ...claims, aud: 'attacker' }, guess) },
    {
      name: 'expired',
      token: hs256({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now - 7200, exp: now - 3600 }, guess),
    },
  ];
  // Key confusion: the public key, as text, used as an HMAC secret under the key's own kid.
  if (key !== null)
    list.push({
      name: 'key confusion',
      token: hs256({ alg: 'HS256', typ: 'JWT', kid: key.kid }, claims, JSON.stringify(key)),
    });
  if (session !== null) {
    // The real token's signature over changed claims: a verifier that reads before it checks falls for it.
    const [header, , signature] = session.accessToken.split('.');
    list.push({
      name: 'tampered claims',
      token: `${header}.${encode({ ...claims, exp: now + 86_400 })}.${signature}`,
    });
    list.push({ name: 'refresh token as access token', token: session.refreshToken });
  }
  return list;
}

/** The deployment refuses every forged token; with a session, it also detects a reused refresh token. */
export async function checkTokens(ctx: CheckContext, session: Session | null): Promise<Finding[]> {
  const accepted: string[] = [];
  const list = await forgeries(ctx, session);
  for (const forgery of list) {
    const answer = await ctx.probe.request('GET', '/acc/me', {
      headers: { Authorization: `Bearer ${forgery.token}` },
    });
    if (answer.status !== 401) accepted.push(`${forgery.name}: ${answer.status}`);
  }
  const forged =
    accepted.length === 0
      ? pass(
          'tokens.forged',
          `all ${list.length} refused with 401 (${list.map((forgery) => forgery.name).join(', ')})`,
        )
      : fail(
          'tokens.forged',
          `not refused: ${accepted.join('; ')}`,
          'the service verifies tokens itself; check that nothing in front answers for it',
        );
  return [
    forged,
    session === null ? skip('tokens.reuse', 'reuse detection needs --account') : await checkReuse(ctx, session),
  ];
}

/** Spends a refresh token twice, its successor used in between: the session must end (RFC 9700 §4.14.2). */
async function checkReuse(ctx: CheckContext, session: Session): Promise<Finding> {
  const name = 'tokens.reuse';
  const refresh = (token: string) =>
    ctx.probe.request('POST', '/auth/token', { form: { grant_type: 'refresh_token', refresh_token: token } });
  const second = await refresh(session.refreshToken);
  if (second.status !== 200)
    return fail(name, `a refresh answers ${second.status}`, 'let the proxy pass POST /auth/token');
  const successor = {
    accessToken: String(second.json?.access_token),
    refreshToken: String(second.json?.refresh_token),
  };
  ctx.sessions.push(successor);
  const third = await refresh(successor.refreshToken);
  if (third.status === 200)
    ctx.sessions.push({
      accessToken: String(third.json?.access_token),
      refreshToken: String(third.json?.refresh_token),
    });
  const reused = await refresh(session.refreshToken);
  const latest = ctx.sessions.at(-1)!;
  const after = await ctx.probe.request('GET', '/acc/me', {
    headers: { Authorization: `Bearer ${latest.accessToken}` },
  });
  if (reused.status !== 200 && after.status === 401)
    return pass(name, `a reused refresh token answers ${reused.status}, and ends its session`);
  return fail(
    name,
    `a reused refresh token answers ${reused.status}; the session then answers ${after.status}`,
    'run one version of the service against one database',
  );
}

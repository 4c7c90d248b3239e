// A small OpenID provider of the tests' own, for every way a provider can misbehave: it answers
// discovery, JWKS and the token endpoint over real HTTP on loopback, and plays the user's visit
// to its authorization endpoint in `authorize`. Each sign-in may carry faults that change what it
// answers. The well-behaved path is checked against a real provider (oidc-real.ts).
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Faults = {
  /** The ID token's claims as they would be, changed: iss, aud, azp, nonce (null: left out), exp, iat (seconds from now). */
  iss?: string; aud?: string | string[]; azp?: string; nonce?: string | null; expIn?: number; iatIn?: number; nbfIn?: number;
  /** A header `crit` naming an extension; a `sub` or `email` of the fault's own (a NUL in it, say). */
  crit?: string[]; sub?: string; email?: string;
  /** How the ID token is signed: another key under a published kid, a key not in the JWKS, alg none, HS256 with the client secret. */
  signing?: 'wrong-key' | 'unknown-key' | 'none' | 'hs256-secret' | 'broken-signature';
  /** The authorization response's `iss` (null: left out), and an `error` in place of the code. */
  issParam?: string | null; error?: string;
  /** The token endpoint answers this many MiB of JSON white space before its answer. */
  hugeAnswerMiB?: number;
};

export type User = { sub: string; email?: string; emailVerified?: boolean };

export type FakeProvider = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The algorithm of the key that signs ID tokens: one of each is published. */
  algorithm: 'RS256' | 'ES256' | 'EdDSA';
  /** Plays the visit to the authorization URL the service sent: the callback URL the provider redirects to. */
  authorize(authorizationUrl: string, user: User, faults?: Faults): string;
  /** Token requests answered, and the codes refused (used twice, wrong verifier, wrong client). */
  counts: { tokenRequests: number; refused: number };
  close(): Promise<void>;
};

type Pending = { user: User; faults: Faults; nonce: string | null; challenge: string; redirectUri: string };

export async function startFakeProvider(options: {
  algorithm?: FakeProvider['algorithm']; discoveryIssuer?: string; sendsIss?: boolean;
} = {}): Promise<FakeProvider> {
  const algorithm = options.algorithm ?? 'RS256';
  const keys = {
    RS256: generateKeyPairSync('rsa', { modulusLength: 2048 }),
    ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    EdDSA: generateKeyPairSync('ed25519'),
  };
  const other = { RS256: generateKeyPairSync('rsa', { modulusLength: 2048 }), ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }), EdDSA: generateKeyPairSync('ed25519') };
  const kid = (alg: string) => `key-${alg.toLowerCase()}`;
  const jwks = {
    keys: Object.entries(keys).map(([alg, pair]) => ({ ...pair.publicKey.export({ format: 'jwk' }), kid: kid(alg), alg, use: 'sig' })),
  };
  const clientId = `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  const codes = new Map<string, Pending>();
  const counts = { tokenRequests: 0, refused: 0 };
  let issuer = '';

  const idToken = (pending: Pending): string => {
    const { user, faults } = pending;
    const now = Math.floor(Date.now() / 1000);
    const claims: Record<string, unknown> = {
      iss: faults.iss ?? issuer, sub: faults.sub ?? user.sub, aud: faults.aud ?? clientId, exp: now + (faults.expIn ?? 300), iat: now + (faults.iatIn ?? 0),
      ...(faults.nbfIn === undefined ? {} : { nbf: now + faults.nbfIn }),
      ...(faults.azp === undefined ? {} : { azp: faults.azp }),
      ...(user.email === undefined && faults.email === undefined ? {} : { email: faults.email ?? user.email, email_verified: user.emailVerified ?? true }),
    };
    const nonce = faults.nonce === undefined ? pending.nonce : faults.nonce;
    if (nonce !== null) claims.nonce = nonce;
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const signing = faults.signing;
    const alg = signing === 'none' ? 'none' : signing === 'hs256-secret' ? 'HS256' : algorithm;
    const header = { alg, typ: 'JWT', kid: signing === 'unknown-key' ? 'key-unknown' : kid(algorithm), ...(faults.crit === undefined ? {} : { crit: faults.crit }) };
    const input = `${encode(header)}.${encode(claims)}`;
    if (alg === 'none') return `${input}.`;
    if (alg === 'HS256') return `${input}.${createHmac('sha256', clientSecret).update(input).digest('base64url')}`;
    const key: KeyObject = signing === 'wrong-key' || signing === 'unknown-key' ? other[algorithm].privateKey : keys[algorithm].privateKey;
    const digest = algorithm === 'EdDSA' ? null : 'sha256';
    const signature = sign(digest, Buffer.from(input), algorithm === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key);
    if (signing === 'broken-signature') signature[0]! ^= 1;
    return `${input}.${signature.toString('base64url')}`;
  };

  const server: Server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = new URL(req.url ?? '/', issuer);
    if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration') {
      reply(200, {
        issuer: options.discoveryIssuer ?? issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`, response_types_supported: ['code'], subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: [algorithm], token_endpoint_auth_methods_supported: ['client_secret_basic'],
        code_challenge_methods_supported: ['S256'], authorization_response_iss_parameter_supported: options.sendsIss ?? true,
      });
      return;
    }
    if (req.method === 'GET' && url.pathname === '/jwks') {
      reply(200, jwks);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        counts.tokenRequests += 1;
        const form = new URLSearchParams(Buffer.concat(chunks).toString());
        const expected = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
        const code = form.get('code') ?? '';
        const pending = codes.get(code);
        codes.delete(code);
        const verifier = form.get('code_verifier') ?? '';
        const fits = pending !== undefined && req.headers.authorization === expected && form.get('grant_type') === 'authorization_code' &&
          form.get('redirect_uri') === pending.redirectUri && createHash('sha256').update(verifier).digest('base64url') === pending.challenge;
        if (!fits) {
          counts.refused += 1;
          reply(400, { error: 'invalid_grant' });
          return;
        }
        const answer = JSON.stringify({ access_token: randomBytes(16).toString('hex'), token_type: 'Bearer', expires_in: 300, id_token: idToken(pending) });
        if (pending.faults.hugeAnswerMiB === undefined) {
          reply(200, JSON.parse(answer));
          return;
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const blank = Buffer.alloc(1024 * 1024, ' ');
        let left = pending.faults.hugeAnswerMiB;
        const more = () => {
          while (left > 0) {
            left -= 1;
            if (!res.write(blank)) return void res.once('drain', more);
          }
          res.end(answer);
        };
        res.on('error', () => {});
        more();
      });
      return;
    }
    reply(404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    get issuer() {
      return issuer;
    },
    clientId,
    clientSecret,
    algorithm,
    counts,
    authorize(authorizationUrl, user, faults = {}) {
      const url = new URL(authorizationUrl);
      const params = url.searchParams;
      if (`${url.origin}${url.pathname}` !== `${issuer}/authorize`) throw new Error(`not this provider's endpoint: ${authorizationUrl}`);
      if (params.get('client_id') !== clientId || params.get('response_type') !== 'code') throw new Error('not a code request of the client');
      if (!(params.get('scope') ?? '').split(' ').includes('openid')) throw new Error('no openid scope');
      if (params.get('code_challenge_method') !== 'S256' || !params.get('code_challenge')) throw new Error('no PKCE (S256)');
      const redirectUri = params.get('redirect_uri') ?? '';
      const back = new URL(redirectUri);
      back.searchParams.set('state', params.get('state') ?? '');
      const issParam = faults.issParam === undefined ? issuer : faults.issParam;
      if (issParam !== null) back.searchParams.set('iss', issParam);
      if (faults.error !== undefined) {
        back.searchParams.set('error', faults.error);
        return back.toString();
      }
      const code = randomBytes(16).toString('base64url');
      codes.set(code, { user, faults, nonce: params.get('nonce'), challenge: params.get('code_challenge')!, redirectUri });
      back.searchParams.set('code', code);
      return back.toString();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

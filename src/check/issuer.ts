import { claimsOf, type CheckContext, type Session } from './context.ts';
import { fail, pass, skip, type Finding } from './report.ts';

const metadataPath = '/.well-known/oauth-authorization-server';

/** TOKEN_ISSUER, the RFC 8414 metadata, the JWKS and the URL given must agree. */
export async function checkIssuer(ctx: CheckContext, session: Session | null): Promise<Finding[]> {
  const origin = ctx.url.origin;
  const metadata = await ctx.probe.request('GET', metadataPath);
  const findings: Finding[] = [];
  if (metadata.status !== 200 || metadata.json === null) {
    findings.push(
      fail(
        'issuer.metadata',
        `GET ${metadataPath} answers ${metadata.status}: TOKEN_ISSUER is not this URL`,
        `set TOKEN_ISSUER=${origin}`,
      ),
    );
  } else {
    const issuer = String(metadata.json.issuer);
    const endpoints = ['token_endpoint', 'revocation_endpoint', 'jwks_uri'].filter(
      (key) => metadata.json![key] !== undefined,
    );
    const foreign = endpoints.filter((key) => !String(metadata.json![key]).startsWith(`${origin}/`));
    if (issuer !== origin && issuer !== `${origin}/`) {
      findings.push(
        fail(
          'issuer.metadata',
          `the metadata's issuer is ${issuer}, the URL is ${origin}`,
          `set TOKEN_ISSUER=${origin}, or check the URL you gave`,
        ),
      );
    } else if (foreign.length > 0) {
      findings.push(
        fail(
          'issuer.metadata',
          `${foreign.join(', ')} not under ${origin}`,
          'serve the metadata from the public URL',
        ),
      );
    } else {
      findings.push(pass('issuer.metadata', `issuer ${issuer}, endpoints under it`));
    }
  }
  findings.push(await checkJwks(ctx, metadata.json?.jwks_uri !== undefined), await checkPasskeys(ctx));
  findings.push(await checkPasskeyOrigins(ctx));
  if (session !== null) findings.push(checkTokenIssuer(origin, session));
  return findings;
}

async function checkJwks(ctx: CheckContext, announced: boolean): Promise<Finding> {
  const name = 'issuer.jwks';
  const answer = await ctx.probe.request('GET', '/.well-known/jwks.json');
  const keys = Array.isArray(answer.json?.keys) ? (answer.json.keys as Record<string, unknown>[]) : null;
  if (answer.status === 404 && !announced) return pass(name, 'no JWKS: tokens are HS256, verified with TOKEN_SECRET');
  if (answer.status !== 200 || keys === null || keys.length === 0) {
    return fail(
      name,
      `GET /.well-known/jwks.json answers ${answer.status} with ${keys?.length ?? 'no'} keys`,
      'let the proxy pass /.well-known/ to the service',
    );
  }
  if (!announced)
    return fail(name, 'a JWKS, but the metadata names no jwks_uri', 'set TOKEN_ISSUER to the public URL');
  // A private member in a published key gives away the signing key itself.
  const leaking = keys.filter((key) => key.d !== undefined);
  if (leaking.length > 0)
    return fail(name, `${leaking.length} published keys carry a private part (d)`, 'rotate every signing key now');
  return pass(
    name,
    `public keys: ${keys.length} (${keys.map((key) => `${String(key.alg)} ${String(key.kid)}`).join(', ')})`,
  );
}

function checkTokenIssuer(origin: string, session: Session): Finding {
  const issuer = String(claimsOf(session.accessToken)?.iss);
  if (issuer === origin || issuer === `${origin}/`) return pass('issuer.token', `access tokens carry iss ${issuer}`);
  return fail(
    'issuer.token',
    `access tokens carry iss ${issuer}, the URL is ${origin}`,
    `set TOKEN_ISSUER=${origin}`,
  );
}

/**
 * The passkey origins (GET /.well-known/webauthn) must use the URL's scheme: behind a proxy
 * that ends TLS, `http://` written for an `https://` site is the mistake operators make, and
 * then no browser's passkey is accepted. `http://localhost` is a browser's one secure http.
 */
async function checkPasskeyOrigins(ctx: CheckContext): Promise<Finding> {
  const name = 'issuer.passkey-origins';
  const answer = await ctx.probe.request('GET', '/.well-known/webauthn');
  if (answer.status === 404) return skip(name, 'passkeys are off, or the origins are not published');
  const origins = answer.json?.origins;
  if (answer.status !== 200 || !Array.isArray(origins)) {
    return fail(name, `GET /.well-known/webauthn answers ${answer.status}`, 'let the proxy pass /.well-known/');
  }
  const scheme = ctx.url.protocol;
  const secureHttp = /^http:\/\/localhost(:|$)/;
  const wrong = origins.map(String).filter((origin) => !origin.startsWith(`${scheme}//`) && !secureHttp.test(origin));
  if (wrong.length === 0) return pass(name, `origins ${origins.join(', ')} use ${scheme}, as the URL does`);
  return fail(
    name,
    `origins ${wrong.join(', ')} do not use ${scheme}, as ${ctx.url.origin} does: passkeys fail there`,
    `write WEBAUTHN_ORIGINS as the browser sees the pages, e.g. ${scheme}//${new URL(wrong[0]!).host}`,
  );
}

/**
 * The RP ID that sign-in options carry must be the URL's host or a parent domain of it, or no
 * browser on this site makes or uses a passkey. The service starts only with origins on its RP
 * ID; their scheme is checkPasskeyOrigins's.
 */
async function checkPasskeys(ctx: CheckContext): Promise<Finding> {
  const name = 'issuer.passkeys';
  const answer = await ctx.probe.request('POST', '/auth/passkey/options');
  if (answer.status === 404 && /:passkeys-not-configured$/.test(String(answer.json?.type)))
    return skip(name, 'passkeys are off (WEBAUTHN_RP_ID is unset)');
  const rpId = (answer.json?.options as Record<string, unknown> | undefined)?.rpId;
  if (answer.status !== 200 || typeof rpId !== 'string')
    return fail(name, `POST /auth/passkey/options answers ${answer.status}`, 'let the proxy pass /auth/passkey/');
  const host = ctx.url.hostname;
  if (rpId === host || host.endsWith(`.${rpId}`))
    return pass(name, `RP ID ${rpId} covers ${host} (the service starts only with origins on the RP ID)`);
  return fail(
    name,
    `RP ID ${rpId} is neither ${host} nor a parent domain of it: passkeys fail on this site`,
    `set WEBAUTHN_RP_ID=${host} (or a parent domain), and WEBAUTHN_ORIGINS to the origins of the pages on it`,
  );
}

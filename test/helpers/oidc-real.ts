// A real OpenID provider for the tests: oidc-provider (a certified implementation), on loopback
// over plain HTTP, with one confidential client. `signIn` plays the user at its own development
// login and consent pages (devInteractions) with fetch and a cookie jar, as a browser without
// scripts would: it reads each HTML form and submits it, and follows redirects on the provider.
// The fake in oidc-fake.ts covers the ways a provider can misbehave; this one is the reference.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type Account, type Configuration } from 'oidc-provider';

export type RealProvider = {
  /** http://127.0.0.1:<port>, exactly as its discovery document says. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /**
   * Plays the user at the provider: opens authorizationUrl (as the service built it), logs in as `sub` through the
   * provider's own login and consent pages with a cookie jar, follows redirects while they stay on the provider's
   * origin, and returns the first Location that leaves it (the relying party's callback URL with code, state and
   * iss), without requesting it.
   */
  signIn(authorizationUrl: string, sub: string): Promise<string>;
  close(): Promise<void>;
};

export type RealProviderOptions = {
  /** The relying party's callback URLs, registered on the client. */
  redirectUris: string[];
  /** The accounts, by sub. */
  accounts: Record<string, { email: string; email_verified: boolean }>;
  clientId?: string;
  clientSecret?: string;
};

// What oidc-provider says on console.warn, as it is constructed, about the development defaults
// used here on purpose (devInteractions, its in-memory adapter): left out of the test output.
// Any other warning goes through.
const devWarning =
  /^oidc-provider WARNING: a quick start development-only (in-memory adapter|feature devInteractions) /;

export async function startRealProvider(options: RealProviderOptions): Promise<RealProvider> {
  const clientId = options.clientId ?? `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = options.clientSecret ?? randomBytes(32).toString('base64url');

  // Listen first, for the port the issuer names; the provider is made below before any request
  // can arrive (nothing awaits in between), so the 503 is never answered in practice.
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const server = createServer((req, res) => {
    if (handle !== null) return handle(req, res);
    res.statusCode = 503;
    res.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => (server.off('error', reject), resolve()));
  });
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;

  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: `rs256-${randomBytes(6).toString('hex')}` };
  const configuration: Configuration = {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: options.redirectUris,
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
      response_types: ['code'],
    }],
    jwks: { keys: [{ ...signingKey, alg: 'RS256', use: 'sig' }] },
    cookies: { keys: [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')] },
    scopes: ['openid', 'email'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // By default a confidential client may leave PKCE out; here every authorization request needs
    // it, and S256 is the only method oidc-provider supports.
    pkce: { required: () => true },
    // By default the ID token of the code flow carries only sub and the protocol claims (the scope's
    // claims are for the userinfo endpoint); the service reads email from the ID token.
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    // Lifetimes given, in seconds, rather than left to the defaults, which say on console.info
    // that they SHOULD be changed.
    ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Interaction: 600, Session: 3600, Grant: 3600 },
    features: { devInteractions: { enabled: true } },
    // An error the provider shows the user (rather than sending to the client) as plain JSON, for
    // signIn to quote: the default page is HTML, and says on console.info that it SHOULD be changed.
    renderError: (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
    findAccount: (_ctx, sub): Account | undefined => {
      if (!Object.hasOwn(options.accounts, sub)) return undefined;
      const account = options.accounts[sub]!;
      return { accountId: sub, claims: () => ({ sub, email: account.email, email_verified: account.email_verified }) };
    },
  };
  const provider = withoutDevWarnings(() => new Provider(issuer, configuration));
  handle = provider.callback();

  return {
    issuer: provider.issuer,
    clientId,
    clientSecret,
    signIn: async (authorizationUrl, sub) => {
      // The provider would take any login, then fail with a server error when findAccount has none.
      if (!Object.hasOwn(options.accounts, sub)) throw new Error(`the provider has no account ${sub}`);
      return signIn(new URL(provider.issuer).origin, authorizationUrl, sub);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function withoutDevWarnings<T>(run: () => T): T {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && devWarning.test(args[0])) return;
    warn.apply(console, args);
  };
  try {
    return run();
  } finally {
    console.warn = warn;
  }
}

/** Cookies as a browser keeps them for one host: by name and path, sent where the path matches. */
class CookieJar {
  readonly #cookies = new Map<string, { name: string; value: string; path: string }>();

  store(response: Response, url: URL): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = header.split(';').map((part) => part.trim());
      const equals = pair.indexOf('=');
      if (equals <= 0) continue;
      const name = pair.slice(0, equals);
      const value = pair.slice(equals + 1);
      let path = url.pathname.slice(0, url.pathname.lastIndexOf('/')) || '/';
      let expired = false;
      for (const attribute of attributes) {
        const [key = '', val = ''] = attribute.split('=', 2).map((part) => part.trim());
        if (/^path$/i.test(key) && val.startsWith('/')) path = val;
        if (/^max-age$/i.test(key) && Number(val) <= 0) expired = true;
        if (/^expires$/i.test(key) && Date.parse(val) <= Date.now()) expired = true;
      }
      const key = `${name}\n${path}`;
      if (expired) this.#cookies.delete(key);
      else this.#cookies.set(key, { name, value, path });
    }
  }

  header(url: URL): string {
    const matches = (path: string) =>
      url.pathname === path || url.pathname.startsWith(path.endsWith('/') ? path : `${path}/`);
    // Longer paths first, as browsers send them.
    return [...this.#cookies.values()]
      .filter((cookie) => matches(cookie.path))
      .sort((a, b) => b.path.length - a.path.length)
      .map((cookie) => `${cookie.name}=${cookie.value}`)
      .join('; ');
  }
}

const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'" };
const decode = (text: string) => text.replace(/&(amp|lt|gt|quot|#39|apos);/g, (_, name: string) => entities[name]!);

/** The attributes of an HTML start tag, names lower-cased, values decoded. */
function attributesOf(tag: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const match of tag.matchAll(/([a-zA-Z_:-]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g)) {
    attributes.set(match[1]!.toLowerCase(), decode(match[2] ?? match[3] ?? match[4] ?? ''));
  }
  return attributes;
}

/** The single form of a devInteractions page, filled in as the user `sub` would: its action and fields. */
function fillForm(html: string, page: URL, sub: string): { action: URL; fields: URLSearchParams } {
  const forms = [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)];
  if (forms.length !== 1) throw new Error(`expected one form at ${page.href}, found ${forms.length}:\n${html}`);
  const [, formTag = '', body = ''] = forms[0]!;
  const form = attributesOf(formTag);
  if ((form.get('method') ?? 'get').toLowerCase() !== 'post') throw new Error(`the form at ${page.href} is not a POST`);
  const fields = new URLSearchParams();
  for (const [, inputTag = ''] of body.matchAll(/<input\b([^>]*)>/gi)) {
    const input = attributesOf(inputTag);
    const name = input.get('name');
    if (name === undefined) continue;
    const type = (input.get('type') ?? 'text').toLowerCase();
    // devInteractions takes any login as the account id, and any password.
    if (name === 'login') fields.set(name, sub);
    else if (type === 'password') fields.set(name, 'any password');
    else fields.set(name, input.get('value') ?? '');
  }
  return { action: new URL(form.get('action') ?? page.href, page), fields };
}

async function signIn(origin: string, authorizationUrl: string, sub: string): Promise<string> {
  const jar = new CookieJar();
  let url = new URL(authorizationUrl);
  if (url.origin !== origin) throw new Error(`${authorizationUrl} is not on the provider at ${origin}`);
  let request: RequestInit = { method: 'GET' };
  // Login, consent and the redirects between them take seven requests.
  for (let step = 0; step < 20; step += 1) {
    const headers: Record<string, string> = { accept: 'text/html' };
    const cookie = jar.header(url);
    if (cookie !== '') headers.cookie = cookie;
    const response = await fetch(url, { ...request, headers: { ...headers, ...request.headers }, redirect: 'manual' });
    jar.store(response, url);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      const next = new URL(location, url);
      if (next.origin !== origin) return next.href;
      url = next;
      request = { method: 'GET' };
      continue;
    }
    const html = await response.text();
    if (response.status !== 200) throw new Error(`${url.href} answered ${response.status}:\n${html}`);
    const { action, fields } = fillForm(html, url, sub);
    url = action;
    request = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    };
  }
  throw new Error(`signing in at ${origin} did not leave the provider after 20 requests`);
}

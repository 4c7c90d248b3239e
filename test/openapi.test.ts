import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { problems, problemTypePrefix } from '../src/http/errors.ts';
import { readApiDocument } from '../src/http/api-document.ts';
import { routes } from '../src/routes.ts';
import { lintApiDocument } from './tools/lint-openapi.ts';
import * as fields from '../src/core/fields.ts';
import * as passkeyFields from '../src/features/passkeys/fields.ts';
import * as factorFields from '../src/features/second-factor/fields.ts';
import * as emailFields from '../src/features/email-change/fields.ts';
import * as oidcFields from '../src/features/oidc/fields.ts';
import { exportSchema } from '../src/features/export/routes.ts';
import { noticesSchema } from '../src/features/sign-in-notices/routes.ts';
import { signInCodeRequestSchema } from '../src/features/email-code/routes.ts';
import { activationSchema, passwordChangeSchema, patterns, registrationSchema } from '../src/core/fields.ts';
import type { Schema } from '../src/http/validate.ts';
import { localeSchema } from '../src/features/account/locale-route.ts';
import { createDocumentChecker, type Document } from './helpers/api-document.ts';
import type { CallOptions, HttpResult } from './helpers/http.ts';
import { codeIn } from './helpers/smtp.ts';
import { startTestService, uniqueUser, type TestService } from './helpers/service.ts';

const document = readApiDocument('openapi.json') as unknown as Document;

/**
 * A pattern as JSON Schema validators compile it, with the `u` flag (Ajv, Prism), which refuses
 * escapes of characters that need none, such as the spec's `\@`. The document carries each rule
 * so; the service itself still validates with the spec's regex.
 */
function unicodeSafePattern(source: string): string {
  const meaningful = /[A-Za-z0-9\\^$.*+?()[\]{}|/-]/;
  return source.replace(/\\(.)/g, (escape, char: string) => (meaningful.test(char) ? escape : char));
}

/** The request schemas of the document and the field rules of the code that the service checks them with. */
const requestSchemas: Record<string, Schema> = {
  RegistrationRequest: fields.registrationSchema, ActivationRequest: fields.activationSchema,
  ResetCodeRequest: fields.resetCodeRequestSchema, PasswordResetRequest: fields.passwordResetSchema,
  PasswordChangeRequest: fields.passwordChangeSchema, AccountDeletionRequest: fields.accountDeletionSchema,
  TotpEnrollmentRequest: factorFields.totpEnrollmentSchema, TotpConfirmationRequest: factorFields.totpConfirmationSchema,
  TotpRemovalRequest: factorFields.totpRemovalSchema, EmailChangeRequest: emailFields.emailChangeRequestSchema,
  EmailChangeConfirmation: emailFields.emailChangeSchema, PasskeyOptionsRequest: passkeyFields.passkeyOptionsSchema,
  PasskeyAdditionRequest: passkeyFields.passkeyAdditionSchema, PasskeyRenameRequest: passkeyFields.passkeyRenameSchema,
  PasskeyRemovalRequest: passkeyFields.passkeyRemovalSchema, LocaleRequest: localeSchema,
  IdentityOptionsRequest: oidcFields.linkOptionsSchema,
  IdentityLinkRequest: oidcFields.linkSchema, IdentityRemovalRequest: oidcFields.identityRemovalSchema,
  ProviderRegistrationRequest: oidcFields.registrationSchema,
  ExportRequest: exportSchema, NoticesRequest: noticesSchema, SignInCodeRequest: signInCodeRequestSchema,
};
const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })));

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1, of the version of package.json', async () => {
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
    assert.equal(document.openapi, '3.1.0');
    assert.equal(document.info.version, pkg.version);
  });

  it('has every route of the router, and no other', () => {
    const documented = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)).sort();
    assert.deepEqual(documented, routes.map((route) => `${route.method} ${route.path}`).sort());
  });

  it('describes each request body with the field rules the service checks it with', () => {
    const named = new Set<string>();
    for (const { name, operation } of operations) {
      const ref = (operation.requestBody?.content['application/json']?.schema as { $ref?: string } | undefined)?.$ref;
      const schemaName = ref?.split('/').pop();
      if (schemaName === undefined || schemaName === 'TokenRequest' || schemaName === 'RevocationRequest') continue;
      const rules = requestSchemas[schemaName];
      assert.ok(rules !== undefined, `${name}: ${schemaName} has the field rules of the code`);
      named.add(schemaName);
      const schema = document.components.schemas[schemaName];
      assert.equal(schema.additionalProperties, false, schemaName);
      for (const [field, rule] of Object.entries(rules)) {
        assert.equal(schema.properties[field].pattern, unicodeSafePattern(rule.pattern.source), `${schemaName}.${field}`);
      }
      const required = Object.entries(rules).filter(([, rule]) => rule.required).map(([field]) => field);
      const extra = (schema.required as string[]).filter((field) => !required.includes(field));
      assert.deepEqual((schema.required as string[]).filter((field) => required.includes(field)), required, schemaName);
      assert.deepEqual(extra, schemaName === 'PasskeyAdditionRequest' ? ['credential'] : [], schemaName);
    }
    assert.deepEqual([...named].sort(), Object.keys(requestSchemas).sort(), 'every rule set describes a body');
  });

  it('carries the spec patterns, the e-mail one without its needless escape of @, and refuses unknown fields', () => {
    const { RegistrationRequest, ActivationRequest, PasswordChangeRequest } = document.components.schemas;
    assert.equal(RegistrationRequest.properties.name.pattern, patterns.name.source);
    assert.equal(RegistrationRequest.properties.email.pattern, '^[a-zA-Z0-9-._]{1,64}@[a-zA-Z0-9\\[]{1}[a-zA-Z0-9.-:]{1,61}[a-zA-Z0-9\\]]{1}$');
    assert.equal(RegistrationRequest.properties.pwd.pattern, '^.{6,32}$');
    assert.equal(RegistrationRequest.properties.phone.pattern, patterns.phone.source);
    assert.deepEqual(RegistrationRequest.properties.phone.type, ['string', 'null']);
    assert.deepEqual(RegistrationRequest.required, ['name', 'email', 'pwd']);
    assert.equal(RegistrationRequest.additionalProperties, false);
    assert.equal(ActivationRequest.properties.code.pattern, patterns.code.source);
    assert.deepEqual(PasswordChangeRequest.required, ['old_pwd', 'new_pwd']);
  });

  it('names every problem type, in an open string so that a new type breaks no generated client', () => {
    const type = document.components.schemas.Problem.properties.type;
    assert.equal(type.type, 'string');
    assert.equal(type.enum, undefined);
    assert.deepEqual(type.examples, Object.values(problems).map((problem) => problemTypePrefix + problem.slug));
  });

  it('has a server relative to itself and the package licence', async () => {
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
    assert.deepEqual(document.servers.map((server) => server.url), ['/']);
    assert.equal(document.info.license.name, pkg.license);
    assert.equal((document.info.license as { identifier?: string }).identifier, pkg.license === 'UNLICENSED' ? 'LicenseRef-UNLICENSED' : pkg.license);
  });

  it('is valid under swagger-parser and clean under Spectral\'s spectral:oas ruleset', async () => {
    assert.deepEqual(await lintApiDocument(document), []);
  });

  it('tags every operation by its path and describes each tag', () => {
    const withTags = document as unknown as { tags: Array<{ name: string; description: string }>; paths: Record<string, Record<string, { tags: string[] }>> };
    assert.deepEqual(withTags.paths['/acc/me']!.get!.tags, ['accounts']);
    assert.deepEqual(withTags.paths['/auth/token']!.post!.tags, ['oauth']);
    assert.deepEqual(withTags.paths['/healthz']!.get!.tags, ['service']);
    assert.deepEqual(withTags.paths['/.well-known/oauth-authorization-server']!.get!.tags, ['discovery']);
    assert.deepEqual(withTags.tags.map((tag) => tag.name).sort(), ['accounts', 'discovery', 'oauth', 'service']);
  });

  it('documents X-Request-Id on every response, and Retry-After, WWW-Authenticate and Allow where they are sent', () => {
    for (const { name, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers = Object.keys(response.headers ?? {}).sort();
        const expected = ['X-Request-Id', ...(status === '429' || status === '503' ? ['Retry-After'] : []), ...(status === '401' ? ['WWW-Authenticate'] : []), ...(status === '405' ? ['Allow'] : []), ...(status === '302' ? ['Location'] : []), ...(status === '302' && name === 'GET /auth/oidc/{name}' ? ['Set-Cookie'] : [])];
        assert.deepEqual(headers, expected.sort(), `${name} ${status}`);
        for (const header of Object.values(response.headers ?? {})) assert.ok(document.components.headers[header.$ref.split('/').pop()!], header.$ref);
      }
    }
  });

  it('gives every operation at least one 4xx, at the least 405 with Allow for the path\'s other methods', () => {
    for (const { name, operation } of operations) {
      assert.ok(Object.keys(operation.responses).some((status) => status.startsWith('4')), name);
      assert.match(operation.responses['405']!.description, /method-not-allowed/, name);
    }
  });

  it('has only patterns that compile with the u flag, as JSON Schema validators compile them', () => {
    const found: string[] = [];
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (typeof node === 'object' && node !== null) {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'pattern' && typeof value === 'string') found.push(value);
          else collect(value);
        }
      }
    };
    collect(document);
    assert.ok(found.length >= 8, `found ${found.length} patterns`);
    for (const pattern of found) assert.doesNotThrow(() => new RegExp(pattern, 'u'), pattern);
    assert.throws(() => new RegExp(patterns.email.source, 'u'), 'the spec regex as written is not valid with u');
  });

  it('emits patterns that accept and reject the same strings as the spec regexes', () => {
    const schemas: Array<[string, Schema]> = [
      ['RegistrationRequest', registrationSchema],
      ['ActivationRequest', activationSchema],
      ['PasswordChangeRequest', passwordChangeSchema],
    ];
    for (const [schemaName, schema] of schemas) {
      for (const [field, rule] of Object.entries(schema)) {
        const emitted = document.components.schemas[schemaName].properties[field].pattern as string;
        const asValidators = new RegExp(emitted, 'u');
        const asService = new RegExp(emitted, rule.pattern.flags);
        let accepted = 0;
        for (const sample of samplesFor(rule.pattern)) {
          const expected = rule.pattern.test(sample);
          assert.equal(asValidators.test(sample), expected, `${schemaName}.${field} with u: ${JSON.stringify(sample)}`);
          assert.equal(asService.test(sample), expected, `${schemaName}.${field}: ${JSON.stringify(sample)}`);
          if (expected) accepted += 1;
        }
        assert.ok(accepted >= 25, `${schemaName}.${field}: only ${accepted} samples matched`);
      }
    }
  });

  it('drops only the escapes that the u flag refuses', () => {
    assert.equal(unicodeSafePattern('a\\@b'), 'a@b');
    assert.equal(unicodeSafePattern('\\s\\+\\[\\]\\.\\-\\\\\\d'), '\\s\\+\\[\\]\\.\\-\\\\\\d');
    assert.equal(unicodeSafePattern('\\\\@'), '\\\\@', 'an escaped backslash stays');
  });

  it('marks as secured exactly the routes that need a bearer token', () => {
    for (const route of routes) {
      const operation = document.paths[route.path]![route.method.toLowerCase()]!;
      assert.deepEqual(operation.security, route.act !== undefined ? [{ bearer: [] }] : [], `${route.method} ${route.path}`);
    }
  });
});

describe('GET /openapi.json', () => {
  let app: TestService;
  before(async () => {
    app = await startTestService();
  });
  after(async () => {
    await app.stop();
  });
  const checkAgainstDocument = createDocumentChecker(document);
  /** One request to the running service; its answer must have `status` and agree with the document. */
  const exchange = async (method: string, path: string, status: number, options: CallOptions = {}, schemaRefuses?: boolean): Promise<HttpResult> => {
    const response = await app.call(method, path, options);
    assert.equal(response.status, status, `${method} ${path}: ${response.text}`);
    checkAgainstDocument(method, path, options, response, schemaRefuses);
    return response;
  };

  it('serves the document', async () => {
    const response = await app.call('GET', '/openapi.json');
    assert.equal(response.status, 200);
    assert.equal(response.json.openapi, '3.1.0');
    // Sign-in with a provider is off without OIDC_PROVIDERS, and by code without FEATURES naming it: their paths are
    // left out of the document served.
    const off = ['oidc', 'email-code'];
    const served = Object.keys(document.paths).filter((path) => !routes.some((route) => route.path === path && off.includes(route.feature ?? '')));
    assert.deepEqual(Object.keys(response.json.paths).sort(), served.sort());
  });

  it('describes the requests and answers of the running service, as Ajv in strict mode checks them', async () => {
    const user = { ...uniqueUser('doc'), phone: '+41 123 456 7890' };
    await exchange('POST', '/acc/reg/code', 204, { json: user });
    await exchange('POST', '/acc/reg/code', 429, { json: user });
    await exchange('POST', '/acc/reg/code', 409, { json: { ...uniqueUser('doc'), name: user.name } });
    await exchange('POST', '/acc/reg/code', 400, { json: { name: 'X', email: 'a@b', pwd: '1', phone: 5, admin: true } });
    await exchange('POST', '/acc/reg/code', 400, { body: '{"name":', headers: { 'content-type': 'application/json' } });
    await exchange('POST', '/acc/reg/code', 415, { body: 'name=x', headers: { 'content-type': 'text/plain' } });
    await exchange('POST', '/acc/reg/code', 413, { json: { name: 'x'.repeat(9000) } });
    const code = codeIn(await app.smtp.waitFor((message) => message.to === user.email));
    await exchange('POST', '/acc/reg', 404, { json: { code: 'ABCD-ABCD-ABCD-ABCD' } });
    await exchange('POST', '/acc/reg', 400, { json: { code: 'ABCD' } });
    await exchange('POST', '/acc/reg', 204, { json: { code } });

    const token = (await exchange('POST', '/auth/token', 200, { json: { grant_type: 'password', username: user.name, password: user.pwd } })).json.access_token as string;
    await exchange('POST', '/auth/token', 400, { json: { grant_type: 'password', username: user.email, password: 'wrong-password' } });
    await exchange('POST', '/auth/token', 400, { json: { grant_type: 'client_credentials', username: user.name, password: user.pwd } });
    await exchange('POST', '/auth/token', 400, { body: `grant_type=password&username=${user.name}&password=wrong-password`, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    await exchange('POST', '/auth/token', 415, { body: 'x', headers: { 'content-type': 'text/plain' } });

    await exchange('GET', '/acc/me', 200, { token });
    await exchange('GET', '/acc/me', 401);
    await exchange('GET', '/acc/me', 401, { token: 'not-a-token' });
    // new_pwd equal to old_pwd: a rule across two fields, beyond what a schema says.
    await exchange('PUT', '/acc/me/pwd', 400, { token, json: { old_pwd: user.pwd, new_pwd: user.pwd } }, false);
    await exchange('PUT', '/acc/me/pwd', 400, { token, json: { old_pwd: user.pwd, new_pwd: '12345' } });
    await exchange('PUT', '/acc/me/pwd', 403, { token, json: { old_pwd: 'wrong-password', new_pwd: 'another-one' } });
    await exchange('PUT', '/acc/me/pwd', 204, { token, json: { old_pwd: user.pwd, new_pwd: 'another-one' } });

    for (const path of ['/healthz', '/readyz', '/openapi.json', '/metrics']) await exchange('GET', path, 200);
    await exchange('DELETE', '/healthz', 405);
    await exchange('POST', '/acc/me', 405, { json: {} });
    await exchange('GET', '/auth/token', 405);

    const late = uniqueUser('doc');
    await exchange('POST', '/acc/reg/code', 204, { json: late });
    const lateCode = codeIn(await app.smtp.waitFor((message) => message.to === late.email));
    app.clock.advance(1801);
    await exchange('POST', '/acc/reg', 410, { json: { code: lateCode } });
  });
});

/**
 * Strings to compare two regexes on: valid examples for every pattern, each mutated at random
 * (an insertion, deletion or replacement from an alphabet that has every character the patterns
 * name, their neighbours, white space, non-ASCII, an astral character and a lone surrogate),
 * and random strings. Seeded, so that a failure repeats.
 */
function samplesFor(pattern: RegExp): string[] {
  const valid = [
    'alice@example.com', 'a.b-c_d@[127.0.0.1]', 'x@b/:9c', 'Z9@a.b-c.d', `${'l'.repeat(64)}@${'d'.repeat(63)}`,
    '+41 123 456 7890', '+01\t234\u00a0567\n8901', '+99 000 0000 0000', 'ABCD-efgh-IJKL-mnop', 'zzzz-AAAA-qQqQ-XyZw', 'ab', 'name-2', 'secret', 'pässwörd😀',
  ].filter((sample) => pattern.test(sample));
  const alphabet = [...'aZz09-._@[]:/,+;\\ \t\n\u00a0é\u2028', '😀', '\ud800'];
  let seed = 12345;
  const random = (below: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % below;
  };
  const pick = () => alphabet[random(alphabet.length)]!;
  const samples: string[] = [...valid];
  for (let round = 0; round < 400; round += 1) {
    for (const example of valid) {
      const chars = [...example];
      for (let edits = 1 + random(2); edits > 0; edits -= 1) {
        const at = random(chars.length + 1);
        const kind = random(3);
        if (kind === 0) chars.splice(at, 0, pick());
        else if (kind === 1) chars.splice(at, 1);
        else chars.splice(at, 1, pick());
      }
      samples.push(chars.join(''));
    }
    samples.push(Array.from({ length: random(80) }, pick).join(''));
  }
  return samples;
}

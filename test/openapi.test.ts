import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { problems, problemTypePrefix } from '../src/http/errors.ts';
import { buildOpenApiDocument } from '../src/openapi.ts';
import { routes } from '../src/routes/index.ts';
import { patterns } from '../src/validation.ts';
import { startTestService, type TestService } from './helpers/service.ts';

type Document = { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: unknown; security: unknown[] }>>; components: { schemas: Record<string, any> } };
const document = buildOpenApiDocument(routes, '1.2.3') as unknown as Document;

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with the version given', () => {
    assert.equal(document.openapi, '3.1.0');
    assert.equal((document as unknown as { info: { version: string } }).info.version, '1.2.3');
  });

  it('has every route of the router, and no other', () => {
    const documented = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)).sort();
    assert.deepEqual(documented, routes.map((route) => `${route.method} ${route.path}`).sort());
  });

  it('lists the success and every error status of each route', () => {
    for (const route of routes) {
      const statuses = Object.keys(document.paths[route.path]![route.method.toLowerCase()]!.responses).map(Number).sort();
      assert.deepEqual(statuses, [route.doc.success.status, ...route.doc.errors].sort(), `${route.method} ${route.path}`);
    }
  });

  it('carries the spec patterns as written, and refuses unknown fields', () => {
    const { RegistrationRequest, ActivationRequest, PasswordChangeRequest } = document.components.schemas;
    assert.equal(RegistrationRequest.properties.name.pattern, patterns.name.source);
    assert.equal(RegistrationRequest.properties.email.pattern, patterns.email.source);
    assert.equal(RegistrationRequest.properties.pwd.pattern, '^.{6,32}$');
    assert.equal(RegistrationRequest.properties.phone.pattern, patterns.phone.source);
    assert.deepEqual(RegistrationRequest.properties.phone.type, ['string', 'null']);
    assert.deepEqual(RegistrationRequest.required, ['name', 'email', 'pwd']);
    assert.equal(RegistrationRequest.additionalProperties, false);
    assert.equal(ActivationRequest.properties.code.pattern, patterns.code.source);
    assert.deepEqual(PasswordChangeRequest.required, ['old_pwd', 'new_pwd']);
  });

  it('names every problem type', () => {
    assert.deepEqual(document.components.schemas.Problem.properties.type.enum, Object.values(problems).map((problem) => problemTypePrefix + problem.slug));
  });

  it('marks the bearer routes as secured', () => {
    assert.deepEqual(document.paths['/acc/me/pwd']!.put!.security, [{ bearer: [] }]);
    assert.deepEqual(document.paths['/acc/reg/code']!.post!.security, []);
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

  it('serves the document', async () => {
    const response = await app.call('GET', '/openapi.json');
    assert.equal(response.status, 200);
    assert.equal(response.json.openapi, '3.1.0');
    assert.deepEqual(Object.keys(response.json.paths).sort(), Object.keys(document.paths).sort());
  });
});

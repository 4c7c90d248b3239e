import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { CallOptions, HttpResult } from './http.ts';

// An OpenAPI document as the tests read it: the public one (test/openapi.test.ts) and the admin
// API's (test/e2e/admin-api.test.ts), both checked against what the running service answers.
type Content = Record<string, { schema: unknown }>;
export type Response = { description: string; headers?: Record<string, { $ref: string }>; content?: Content };
export type Operation = {
  tags?: string[];
  responses: Record<string, Response>;
  requestBody?: { content: Content };
  security: unknown[];
};
export type Document = {
  openapi: string;
  info: { version: string; license: { name: string } };
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, any>; headers: Record<string, { required?: boolean; schema: unknown }> };
};

/**
 * Validates what the running service answered against the document, with Ajv in strict mode:
 * the request body against the request schema, the status against the documented responses,
 * each documented header, and the body against the schema of its media type.
 */
export function createDocumentChecker(doc: Document) {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
  formats.default(ajv);
  const base = 'urn:account-service:openapi';
  const rewrite = (node: unknown): unknown =>
    JSON.parse(JSON.stringify(node).replaceAll('"#/components/schemas/', `"${base}#/$defs/`));
  ajv.addSchema({ $id: base, $defs: rewrite(doc.components.schemas) as Record<string, unknown> });
  const compiled = new Map<string, ValidateFunction>();
  const validate = (schema: unknown, value: unknown): string | null => {
    const key = JSON.stringify(schema);
    if (!compiled.has(key)) compiled.set(key, ajv.compile(rewrite(schema) as object));
    const check = compiled.get(key)!;
    return check(value) ? null : ajv.errorsText(check.errors);
  };

  /** `schemaRefuses`: whether the request schema refuses the body; by default, when the service refused it. */
  return (method: string, path: string, request: CallOptions, response: HttpResult, schemaRefuses?: boolean): void => {
    const label = `${method} ${path} ${response.status}`;
    const methods = doc.paths[path];
    assert.ok(methods, `${path} is documented`);
    // A 405 answers a method the path does not serve, so any of its operations documents it.
    const fallback = response.status === 405 ? Object.values(methods)[0] : undefined;
    const operation = methods[method.toLowerCase()] ?? fallback;
    assert.ok(operation, `${method} ${path} is documented`);

    const requestSchema = operation.requestBody?.content['application/json']?.schema;
    // A body refused for its size or type was never read, so the schema has nothing to say of it.
    const read = response.status !== 413 && response.status !== 415;
    if (request.json !== undefined && requestSchema !== undefined && read) {
      const oauthInvalid = ['invalid_request', 'unsupported_grant_type'].includes(response.json?.error);
      const invalid = /invalid-fields$/.test(response.json?.type) || oauthInvalid;
      const refused = schemaRefuses ?? (response.status === 400 && invalid);
      const problem = validate(requestSchema, request.json);
      if (refused) assert.notEqual(problem, null, `${label}: the document accepts a body the service refused`);
      else assert.equal(problem, null, `${label}: the document refuses a body the service took: ${problem}`);
    }

    const documented = operation.responses[String(response.status)];
    assert.ok(documented, `${label}: status not documented`);
    for (const [name, { $ref }] of Object.entries(documented.headers ?? {})) {
      const header = doc.components.headers[$ref.split('/').pop()!]!;
      const value = response.headers[name.toLowerCase()];
      if (value === undefined) {
        assert.notEqual(header.required, true, `${label}: required header ${name} missing`);
        continue;
      }
      const integer = (header.schema as { type?: string }).type === 'integer' && /^[0-9]+$/.test(String(value));
      const typed = integer ? Number(value) : value;
      assert.equal(validate(header.schema, typed), null, `${label}: header ${name}: ${value}`);
    }

    if (documented.content === undefined) {
      assert.equal(response.text, '', `${label}: a body where none is documented`);
      return;
    }
    const mediaType = String(response.headers['content-type']).split(';')[0]!.trim();
    const content = documented.content[mediaType];
    assert.ok(content, `${label}: ${mediaType} is not documented (${Object.keys(documented.content)})`);
    const body = mediaType.endsWith('json') ? response.json : response.text;
    assert.equal(validate(content.schema, body), null, `${label}: body ${response.text.slice(0, 200)}`);
  };
}

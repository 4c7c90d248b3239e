import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acceptedMediaType, parseJsonObject } from '../../src/http/body.ts';
import { HttpError } from '../../src/http/errors.ts';

describe('acceptedMediaType', () => {
  const json = ['application/json'] as const;
  it('accepts the type with or without a UTF-8 charset, in any case', () => {
    for (const header of ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON;charset=UTF-8', 'application/json; charset="utf8"']) {
      assert.equal(acceptedMediaType(header, [...json]), 'application/json', header);
    }
  });
  it('refuses other types and charsets', () => {
    for (const header of [undefined, '', 'text/json', 'application/json; charset=iso-8859-1', 'application/json-patch+json']) {
      assert.equal(acceptedMediaType(header, [...json]), null, String(header));
    }
  });
});

describe('parseJsonObject', () => {
  it('returns a JSON object and refuses everything else as malformed-body', () => {
    assert.deepEqual(parseJsonObject('{"a":1}'), { a: 1 });
    for (const text of ['', '[]', 'null', '"x"', '{', '{"a":1}x']) {
      assert.throws(() => parseJsonObject(text), (error: unknown) => error instanceof HttpError && error.problem.slug === 'malformed-body', text);
    }
  });
});

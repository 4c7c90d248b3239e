import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError, OAuthError, problems } from '../../src/http/errors.ts';

describe('HttpError', () => {
  it('is an Error whose message is the detail, or else the title', () => {
    const withDetail = new HttpError(problems.malformedBody, { detail: 'The body is not valid JSON.' });
    assert.ok(withDetail instanceof Error);
    assert.equal(withDetail.name, 'HttpError');
    assert.equal(withDetail.message, 'The body is not valid JSON.');
    assert.equal(new HttpError(problems.notFound).message, 'No such resource');
  });

  it('captures no stack, and leaves the stack trace limit of other errors as it was', () => {
    const before = Error.stackTraceLimit;
    assert.equal(new HttpError(problems.notFound).stack, 'HttpError: No such resource');
    assert.equal(Error.stackTraceLimit, before);
    assert.match(new Error('a fault').stack ?? '', /\n\s+at /);
  });
});

describe('OAuthError', () => {
  it('is an Error with the RFC 6749 code and the description as its message', () => {
    const error = new OAuthError('invalid_request', 'grant_type is required.');
    assert.ok(error instanceof Error);
    assert.equal(error.code, 'invalid_request');
    assert.equal(error.message, 'grant_type is required.');
  });
});

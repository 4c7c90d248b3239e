import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { passwordChangeSchema, patterns, registrationSchema, resetCodeRequestSchema } from '../src/core/fields.ts';
import { isPlainObject, isWellFormed, validateFields } from '../src/http/validate.ts';

describe('patterns', () => {
  it('are the spec regexes as written', () => {
    assert.equal(patterns.name.source, '^[a-z0-9-]{2,32}$');
    assert.equal(patterns.email.source, '^[a-zA-Z0-9-._]{1,64}\\@[a-zA-Z0-9\\[]{1}[a-zA-Z0-9.-:]{1,61}[a-zA-Z0-9\\]]{1}$');
    assert.equal(patterns.password.source, '^.{6,32}$');
    assert.equal(patterns.phone.source, '^\\+[0-9]{2}\\s[0-9]{3}\\s([0-9]{3}|[0-9]{4})\\s[0-9]{4}$');
    assert.equal(patterns.code.source, '^([a-zA-Z]{4}-){3}[a-zA-Z]{4}$');
    assert.equal(patterns.name.flags, '');
    assert.equal(patterns.password.flags, 'u');
  });

  it('count password length in code points', () => {
    assert.equal(patterns.password.test('😀'.repeat(6)), true, 'six astral characters are six characters');
    assert.equal(patterns.password.test('😀'.repeat(32)), true);
    assert.equal(patterns.password.test('😀'.repeat(33)), false);
    assert.equal(patterns.password.test('12345'), false);
    assert.equal(patterns.password.test('123456\n'), false);
  });

  it('take the email domain range .-: literally as the spec wrote it', () => {
    assert.equal(patterns.email.test('a@b/:9c'), true, "'/' and ':' fall inside the range . to :");
    assert.equal(patterns.email.test('a@b,c'), false);
  });

  it('take \\s in the phone pattern as any white space, as written', () => {
    assert.equal(patterns.phone.test('+12\t345\u00a0678\n9012'), true);
  });
});

describe('validateFields', () => {
  it('returns the values when all fields are valid, with phone and locale null when absent', () => {
    const { value, invalid } = validateFields({ name: 'ab', email: 'a@b.c', pwd: 'secret' }, registrationSchema);
    assert.deepEqual(invalid, []);
    assert.deepEqual(value, { name: 'ab', email: 'a@b.c', pwd: 'secret', phone: null, locale: null });
  });

  it('reports every failing field in schema order, then unknown fields', () => {
    const { invalid } = validateFields({ zz: 1, pwd: 5, phone: false }, registrationSchema);
    assert.deepEqual(invalid, [
      { name: 'name', reason: 'is required' },
      { name: 'email', reason: 'is required' },
      { name: 'pwd', reason: 'must be a string' },
      { name: 'phone', reason: 'must be a string or null' },
      { name: 'zz', reason: 'is not a known field' },
    ]);
  });

  it('reads only own properties, so inherited names do not count as present', () => {
    const body = Object.create({ name: 'inherited' }) as Record<string, unknown>;
    assert.deepEqual(validateFields(body, { name: registrationSchema.name }).invalid, [{ name: 'name', reason: 'is required' }]);
    const parsed = JSON.parse('{"__proto__": "x", "name": "ab"}') as Record<string, unknown>;
    assert.deepEqual(validateFields(parsed, { name: registrationSchema.name }).invalid, [{ name: '__proto__', reason: 'is not a known field' }]);
  });

  it('never repeats a field value in a reason', () => {
    const { invalid } = validateFields({ name: 'SECRET-NAME', email: 'x', pwd: 'p' }, registrationSchema);
    assert.equal(JSON.stringify(invalid).includes('SECRET-NAME'), false);
  });
});

describe('isPlainObject', () => {
  it('is true only for non-null, non-array objects', () => {
    assert.deepEqual([{}, [], null, 1, 'x'].map(isPlainObject), [true, false, false, false, false]);
  });
});

describe('lone surrogates', () => {
  it('are not well-formed; surrogate pairs are', () => {
    assert.equal(isWellFormed('\ud800abcdef'), false);
    assert.equal(isWellFormed('abc\udfffdef'), false);
    assert.equal(isWellFormed('abcdef\ud83d'), false, 'a high half at the end');
    assert.equal(isWellFormed('😀abcdef'), true);
    assert.equal(isWellFormed('\ufffdabcdef'), true, 'U+FFFD itself is a character');
    assert.equal(isWellFormed('abcdef\u0000'), false, 'a NUL, which scrypt would not tell from its absence');
  });

  it('are refused in a password, a name or an address, naming the field', () => {
    const reason = 'must be well-formed Unicode without NUL (no lone surrogate, no U+0000)';
    const registration = validateFields({ name: 'ab\ud800', email: 'a\udc00@example.com', pwd: '\ud800abcdef' }, registrationSchema);
    assert.deepEqual(registration.invalid, [
      { name: 'name', reason },
      { name: 'email', reason },
      { name: 'pwd', reason },
    ]);
    assert.deepEqual(validateFields({ old_pwd: 'abcdef\udfff', new_pwd: 'good-password' }, passwordChangeSchema).invalid, [{ name: 'old_pwd', reason }]);
    assert.deepEqual(validateFields({ email: '\ud800@example.com' }, resetCodeRequestSchema).invalid, [{ name: 'email', reason }]);
  });
});

describe('invalid-params', () => {
  it('say in words what a value must be, with the rule it missed beside, for every field of every body', async () => {
    const { invalid } = validateFields({ name: 'X', email: 'a@', pwd: 'x'.repeat(33), phone: '123', locale: 'de_DE' }, registrationSchema);
    assert.deepEqual(invalid, [
      { name: 'name', reason: 'must be 2 to 32 lower-case letters, digits or hyphens', pattern: patterns.name.source },
      { name: 'email', reason: 'must be an e-mail address such as alice@example.com, with letters, digits, "-", "." or "_" before the @', pattern: patterns.email.source },
      { name: 'pwd', reason: 'must be 6 to 32 characters', pattern: '^.{6,32}$' },
      { name: 'phone', reason: 'must be a phone number like +41 123 456 7890', pattern: patterns.phone.source },
      { name: 'locale', reason: 'must be a locale such as de, de-AT or pt-BR', pattern: '^[a-zA-Z]{2,3}(-[a-zA-Z]{4})?(-[a-zA-Z]{2}|-[0-9]{3})?$' },
    ]);
    // No reason anywhere is a bare regular expression.
    const schemas = await Promise.all(['../src/core/fields.ts', '../src/features/second-factor/fields.ts', '../src/features/passkeys/fields.ts', '../src/features/email-change/fields.ts', '../src/features/oidc/fields.ts'].map((path) => import(path)));
    for (const module of schemas) {
      for (const [exported, schema] of Object.entries(module)) {
        if (typeof schema !== 'object' || schema === null || Object.values(schema).some((rule) => typeof rule !== 'object' || rule === null || !('mismatch' in rule))) continue;
        for (const [name, rule] of Object.entries(schema as Record<string, { mismatch: string }>)) {
          assert.doesNotMatch(rule.mismatch, /^must match /, `${exported}.${name}: ${rule.mismatch}`);
        }
      }
    }
  });
});

/** Checks a request body against a schema of field rules; the rules themselves are the core's (core/fields.ts). */
/** `mismatch` is the reason given for a value that does not match, made once with the rule. */
export type FieldRule = { pattern: RegExp; required: boolean; nullable: boolean; mismatch: string };
export type Schema = Record<string, FieldRule>;

/** What a pattern asks for, in words, as `explained` gave them. */
const meanings = new WeakMap<RegExp, string>();

/** Gives a pattern its words ("6 to 32 characters"), which a refusal says; returns the pattern. */
export function explained(pattern: RegExp, words: string): RegExp {
  meanings.set(pattern, words);
  return pattern;
}

export function field(pattern: RegExp, options: { required?: boolean; nullable?: boolean } = {}): FieldRule {
  const { required = true, nullable = false } = options;
  const words = meanings.get(pattern);
  const mismatch = words === undefined ? `must match ${pattern.source}` : `must be ${words}`;
  return { pattern, required, nullable, mismatch };
}

/** A field that failed validation, as RFC 9457 `invalid-params` lists it; `pattern`: the rule it missed. */
export type InvalidParam = { name: string; reason: string; pattern?: string };

export type Valid<S extends Schema> = { [K in keyof S]: S[K]['nullable'] extends true ? string | null : string };

/**
 * Checks a parsed JSON object against a schema and reports every failing field at once.
 * Unknown fields are refused so that a client can never set a column it should not
 * (mass assignment); only own properties are read, so `__proto__` is just another name.
 */
export function validateFields<S extends Schema>(
  body: Record<string, unknown>, schema: S,
): { value: Valid<S>; invalid: InvalidParam[] } {
  const invalid: InvalidParam[] = [];
  const value: Record<string, string | null> = {};
  for (const [name, rule] of Object.entries(schema)) {
    const reason = checkField(body, name, rule);
    if (reason === null) value[name] = Object.hasOwn(body, name) ? (body[name] as string | null) : null;
    else invalid.push(reason === rule.mismatch ? { name, reason, pattern: rule.pattern.source } : { name, reason });
  }
  for (const name of Object.keys(body)) {
    if (!Object.hasOwn(schema, name)) invalid.push({ name, reason: 'is not a known field' });
  }
  return { value: value as Valid<S>, invalid };
}

/**
 * Text a password hash could not tell apart, refused in every field. A lone surrogate
 * ("\ud800") is no character at all: encoded for hashing it becomes U+FFFD, so every lone
 * surrogate would be the same password. A NUL (U+0000) at the end vanishes in scrypt's
 * PBKDF2-HMAC, which pads a short key with zero bytes: "secret" and "secret\0" would be the same
 * password. With the `u` flag a surrogate pair is one code point, so only a lone half matches.
 */
const indistinct = /[\p{Surrogate}\u0000]/u;

/** True when the string is well-formed UTF-16 without NUL: no lone surrogate, no U+0000. */
export function isWellFormed(value: string): boolean {
  return !indistinct.test(value);
}

export const malformedReason = 'must be well-formed Unicode without NUL (no lone surrogate, no U+0000)';

function checkField(body: Record<string, unknown>, name: string, rule: FieldRule): string | null {
  if (!Object.hasOwn(body, name)) return rule.required ? 'is required' : null;
  const value = body[name];
  if (value === null) return rule.nullable ? null : 'must not be null';
  if (typeof value !== 'string') return rule.nullable ? 'must be a string or null' : 'must be a string';
  if (!isWellFormed(value)) return malformedReason;
  return rule.pattern.test(value) ? null : rule.mismatch;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A UUID in the lower-case form this service writes (session ids, public account ids). */
export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

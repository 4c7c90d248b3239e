import { randomBytes, scrypt, type ScryptOptions } from 'node:crypto';
import { equalSecrets } from './constant-time.ts';
import type { Lane, Limiter } from '../support/concurrency.ts';
import { scryptParamsPattern, type ScryptParams } from '../config/config.ts';

export type PasswordHasher = {
  /** `lane` says whose work it is, for the hashing limiter's fairness (concurrency.ts). */
  hash(password: string, lane?: Lane): Promise<string>;
  /**
   * True when `password` matches the stored PHC string. With `stored` null (no such account)
   * it does the same scrypt work and answers false, so that timing cannot tell the cases apart.
   * `whenSlotGranted` runs first, once the hashing slot is granted; false skips the work and answers false.
   * Why in the slot: a check refused for overload (503) must not have been counted (a throttle
   * reservation made before the slot would charge the owner for the service's load).
   */
  verify(password: string, stored: string | null, whenSlotGranted?: () => Promise<boolean>): Promise<boolean>;
  /** True unless the stored hash is one layer made with the current parameters. */
  needsRehash(stored: string): boolean;
  /**
   * Wraps an outdated hash in one more layer, without the password, so that checking it costs
   * what the current parameters cost. Null when nothing is to be done or it cannot be done.
   */
  wrap(stored: string): Promise<string | null>;
};

/** One scrypt pass: its parameters and its salt. A stored hash is one pass or a chain of them. */
export type Layer = { params: ScryptParams; salt: Buffer };
export type ParsedHash = { layers: Layer[]; hash: Buffer };
export type Derive = (input: string | Buffer, salt: Buffer, params: ScryptParams) => Promise<Buffer>;

const saltBytes = 16;
const hashBytes = 32;
const base64Pattern = /^[A-Za-z0-9+/]+$/;
/** A wrapped hash counts as equal in cost when its work is within this share of the current one. */
const workTolerance = 0.05;

/** scrypt's work grows with N·r·p; memory with N·r. */
export function scryptWork(params: ScryptParams): number {
  return 2 ** params.ln * params.r * params.p;
}

/** The work of checking a stored hash: the sum over its layers; null if it is not a scrypt PHC string. */
export function storedWork(stored: string): number | null {
  const parsed = parseHash(stored);
  return parsed === null ? null : parsed.layers.reduce((sum, layer) => sum + scryptWork(layer.params), 0);
}

/** `derive` is the scrypt call; tests pass their own to count the work each path does. */
export function createPasswordHasher(params: ScryptParams, derive: Derive = deriveScrypt): PasswordHasher {
  const current = (parsed: ParsedHash) => parsed.layers.length === 1 && sameParams(parsed.layers[0]!.params, params);
  return {
    async hash(password) {
      const salt = randomBytes(saltBytes);
      return formatHash({ layers: [{ params, salt }], hash: await derive(password, salt, params) });
    },
    async verify(password, stored, whenSlotGranted) {
      if (whenSlotGranted !== undefined && !(await whenSlotGranted())) return false;
      const parsed = stored === null ? null : parseHash(stored);
      // A missing account is checked against a hash that matches nothing, made with the current parameters.
      const target = parsed ?? { layers: [{ params, salt: randomBytes(saltBytes) }], hash: Buffer.alloc(hashBytes) };
      let candidate: string | Buffer = password;
      for (const layer of target.layers) candidate = await derive(candidate, layer.salt, layer.params);
      const equal = sameHash(candidate, target.hash);
      return parsed !== null && equal;
    },
    needsRehash(stored) {
      const parsed = parseHash(stored);
      return parsed === null || !current(parsed);
    },
    async wrap(stored) {
      const parsed = parseHash(stored);
      if (parsed === null || current(parsed)) return null;
      const outer = wrappingParams(storedWork(stored)!, params);
      if (outer === null) return null;
      const salt = randomBytes(saltBytes);
      const hash = await derive(parsed.hash, salt, outer);
      return formatHash({ layers: [...parsed.layers, { params: outer, salt }], hash });
    },
  };
}

/**
 * The parameters of an outer layer that brings a chain of `work` up to the work of `target`,
 * or null when the chain already costs that much (within the tolerance) or more. Why: an
 * unknown user is checked at the current cost, so every stored hash must cost the same for a
 * wrong password to take as long as an unknown name (account-enumeration safety).
 *
 * Equal N·r·p is not equal time: two layers at ln=14 took 5 to 8 % less time than one at ln=15
 * with the same N·r·p (npm run bench, enumeration), enough to tell such accounts apart. A layer
 * at the current N made up with a smaller r·p took the time of the current parameters to within
 * 1.5 %. So the outer layer keeps the largest N that can make up the work within the tolerance,
 * with the r nearest the current one, never above it (memory per hash stays within the current
 * parameters'), and p to fill.
 */
export function wrappingParams(work: number, target: ScryptParams): ScryptParams | null {
  const tolerance = scryptWork(target) * workTolerance;
  const missing = scryptWork(target) - work;
  if (missing <= tolerance) return null;
  let best: { params: ScryptParams; gap: number } | null = null;
  for (let ln = target.ln; ln >= 1 && (best === null || best.gap > tolerance); ln -= 1) {
    for (let r = 1; r <= target.r; r += 1) {
      const params = { ln, r, p: Math.min(64, Math.max(1, Math.round(missing / (2 ** ln * r)))) };
      const gap = Math.abs(scryptWork(params) - missing);
      if (best === null || isBetter(gap, params.r, best.gap, best.params.r)) best = { params, gap };
    }
  }
  return best!.params;

  function isBetter(gap: number, r: number, bestGap: number, bestR: number): boolean {
    if ((gap <= tolerance) !== (bestGap <= tolerance)) return gap <= tolerance;
    if (gap > tolerance) return gap < bestGap;
    // Both make up the work closely enough: the r of the current parameters, as near as can be.
    return Math.abs(r - target.r) < Math.abs(bestR - target.r) || (r === bestR && gap < bestGap);
  }
}

function deriveScrypt(input: string | Buffer, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const cost = 2 ** params.ln;
  const options: ScryptOptions = { N: cost, r: params.r, p: params.p, maxmem: 256 * cost * params.r };
  const secret = typeof input === 'string' ? input.normalize('NFC') : input;
  // Asynchronous scrypt runs on libuv's thread pool, so hashing never blocks the event loop.
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, hashBytes, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

function sameParams(a: ScryptParams, b: ScryptParams): boolean {
  return a.ln === b.ln && a.r === b.r && a.p === b.p;
}

const encode = (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '');

/** Constant-time comparison: a timing difference would reveal how many leading bytes match. */
const sameHash = (candidate: string | Buffer, hash: Buffer): boolean =>
  Buffer.isBuffer(candidate) && equalSecrets(candidate, hash);

/**
 * PHC string `$scrypt$ln=15,r=8,p=3$<salt>$<hash>`; a wrapped hash repeats the
 * `$<params>$<salt>` pair once per layer, innermost first.
 */
export function formatHash({ layers, hash }: ParsedHash): string {
  const passes = layers
    .map(({ params: { ln, r, p }, salt }) => `$ln=${ln},r=${r},p=${p}$${encode(salt)}`)
    .join('');
  return `$scrypt${passes}$${encode(hash)}`;
}

export function parseHash(stored: string): ParsedHash | null {
  const parts = stored.split('$');
  if (parts[0] !== '' || parts[1] !== 'scrypt' || parts.length < 5 || parts.length % 2 === 0) return null;
  const layers: Layer[] = [];
  for (let index = 2; index < parts.length - 1; index += 2) {
    const match = scryptParamsPattern.exec(parts[index]!);
    const salt = parts[index + 1]!;
    if (match === null || !base64Pattern.test(salt)) return null;
    const params = { ln: Number(match[1]), r: Number(match[2]), p: Number(match[3]) };
    layers.push({ params, salt: Buffer.from(salt, 'base64') });
  }
  const hash = parts[parts.length - 1]!;
  return base64Pattern.test(hash) ? { layers, hash: Buffer.from(hash, 'base64') } : null;
}

/** The same hasher with every scrypt call passed through `limiter`, so that hashing is bounded. */
export function limitPasswordHasher(hasher: PasswordHasher, limiter: Limiter): PasswordHasher {
  return {
    hash: (password, lane) => limiter.run(() => hasher.hash(password), lane),
    verify: (password, stored, whenSlotGranted) =>
      limiter.run(async () => {
        const proceed = whenSlotGranted === undefined || (await whenSlotGranted());
        return proceed && hasher.verify(password, stored);
      }),
    needsRehash: (stored) => hasher.needsRehash(stored),
    wrap: (stored) => hasher.wrap(stored),
  };
}

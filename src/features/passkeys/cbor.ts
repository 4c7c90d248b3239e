/**
 * A strict CBOR decoder (RFC 8949) for what WebAuthn sends: attestation objects and COSE keys.
 * Only definite lengths, no tags, no floats, no duplicate map keys, and caps on depth, item
 * count and size, so that a hostile authenticator response costs bounded work and memory.
 * Anything else is refused (null), never guessed at.
 */
export type CborValue =
  | number | bigint | Buffer | string | boolean | null | CborValue[] | Map<number | string, CborValue>;

const maxDepth = 4;
const maxItems = 64;
export const maxCborBytes = 4096;

/** The one item that fills `bytes` exactly, or null: trailing bytes are refused. */
export function decodeCbor(bytes: Buffer): CborValue | null {
  const read = readCbor(bytes, 0);
  return read !== null && read.end === bytes.length ? read.value : null;
}

/** The item that starts at `offset` and where it ends (authenticator data holds a COSE key followed by more). */
export function readCbor(bytes: Buffer, offset: number): { value: CborValue; end: number } | null {
  if (bytes.length - offset > maxCborBytes) return null;
  try {
    const state = { bytes, at: offset, items: 0 };
    return { value: readItem(state, 0), end: state.at };
  } catch {
    return null;
  }
}

type State = { bytes: Buffer; at: number; items: number };

function readItem(state: State, depth: number): CborValue {
  if (depth > maxDepth || ++state.items > maxItems) throw new Error('too deep or too many items');
  const initial = take(state, 1)[0]!;
  const major = initial >> 5;
  const argument = readArgument(state, initial & 0x1f);
  switch (major) {
    case 0:
      return argument;
    case 1:
      return typeof argument === 'bigint' ? -1n - argument : -1 - argument;
    case 2:
      return Buffer.from(take(state, length(argument)));
    case 3:
      return new TextDecoder('utf-8', { fatal: true }).decode(take(state, length(argument)));
    case 4:
      return Array.from({ length: length(argument) }, () => readItem(state, depth + 1));
    case 5:
      return readMap(state, length(argument), depth);
    case 7:
      if (initial === 0xf4 || initial === 0xf5) return initial === 0xf5;
      if (initial === 0xf6) return null;
  }
  throw new Error('tags, floats and other simple values are refused');
}

function readMap(state: State, entries: number, depth: number): Map<number | string, CborValue> {
  const map = new Map<number | string, CborValue>();
  for (let index = 0; index < entries; index += 1) {
    const key = readItem(state, depth + 1);
    const usable = (typeof key === 'number' || typeof key === 'string') && !map.has(key);
    if (!usable) throw new Error('bad or repeated map key');
    map.set(key, readItem(state, depth + 1));
  }
  return map;
}

/** The argument of an initial byte; indefinite lengths (31) and reserved values (28–30) are refused. */
function readArgument(state: State, info: number): number | bigint {
  if (info < 24) return info;
  if (info === 24) return take(state, 1).readUInt8(0);
  if (info === 25) return take(state, 2).readUInt16BE(0);
  if (info === 26) return take(state, 4).readUInt32BE(0);
  if (info === 27) {
    const value = take(state, 8).readBigUInt64BE(0);
    return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  }
  throw new Error('indefinite or reserved length');
}

function length(argument: number | bigint): number {
  if (typeof argument === 'bigint' || argument > maxCborBytes) throw new Error('length over the cap');
  return argument;
}

function take(state: State, count: number): Buffer {
  if (state.at + count > state.bytes.length) throw new Error('truncated');
  const slice = state.bytes.subarray(state.at, state.at + count);
  state.at += count;
  return slice;
}

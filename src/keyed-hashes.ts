import { createHmac, hkdfSync } from 'node:crypto';

/**
 * Keyed hashes (HMAC-SHA256) of what callers typed, for tables that count per address or per
 * name. Keyed, so that the tables hold nothing that could be read back or matched against a
 * list of addresses without the secret. Each purpose has its own key, derived from the first
 * TOKEN_SECRET with HKDF. Values are lower-cased first: names and addresses ignore case.
 */
export type KeyedHashes = {
  /** An e-mail address, for the per-address code quotas. */
  address(email: string): Buffer;
  /** A sign-in identifier (a name or an address, as typed), for the sign-in throttle. */
  loginIdentifier(username: string): Buffer;
  /** A client (IP) address, for the sign-in throttle. */
  client(address: string): Buffer;
};

export function createKeyedHashes(secret: Buffer): KeyedHashes {
  const hasher = (label: string) => {
    const key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `account-service ${label}`, 32));
    return (value: string) => createHmac('sha256', key).update(value.toLowerCase()).digest();
  };
  return { address: hasher('address quota v1'), loginIdentifier: hasher('login identifier v1'), client: hasher('login client v1') };
}

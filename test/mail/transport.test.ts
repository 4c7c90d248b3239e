import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertMailable } from '../../src/mail/transport.ts';

/** The error assertMailable throws for `address`, or null when it takes the address. */
function refusal(address: string): { message: string; code: unknown } | null {
  try {
    assertMailable(address);
    return null;
  } catch (error) {
    return { message: (error as Error).message, code: (error as { code?: unknown }).code };
  }
}

describe('assertMailable', () => {
  it('takes a host name, a label of digits inside one, and a top-level domain that starts with 0x', () => {
    for (const address of ['a@example.com', 'a@mail.example.co.uk', 'a@123.example.com', 'a@localhost', 'a@b.0xg']) {
      assert.equal(refusal(address), null, address);
    }
  });

  it('refuses a domain that is an IP address in any form, as it refuses a domain that is no host name', () => {
    const ipAddresses = [
      'x11@1.2.3.4', 'x@[10.1.2.3]', 'x@[IPv6:::1]', 'x@127.1', 'x@0x7f.1', 'x@0x7f000001', 'x@2130706433',
      'x@0177.0.0.1', 'x@example.com.1', 'x@a.0x',
    ];
    for (const address of [...ipAddresses, 'x@evil.test/a:b']) {
      assert.deepEqual(refusal(address), { message: 'the address\'s domain is not a host name', code: 'EENVELOPE' }, address);
    }
  });
});

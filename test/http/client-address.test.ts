import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { clientAddress } from '../../src/core/client-address.ts';

const request = (peer: string, forwarded?: string | string[]) =>
  ({ socket: { remoteAddress: peer }, headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } }) as unknown as IncomingMessage;

describe('clientAddress', () => {
  it('is the TCP peer when no proxy is trusted, whatever the header says', () => {
    assert.equal(clientAddress(request('10.0.0.1', '1.2.3.4'), 0), '10.0.0.1');
  });

  it('reads as many hops from the right as proxies are trusted', () => {
    assert.equal(clientAddress(request('10.0.0.1', '6.6.6.6, 1.2.3.4'), 1), '1.2.3.4', 'a spoofed entry on the left is ignored');
    assert.equal(clientAddress(request('10.0.0.1', '1.2.3.4, 10.0.0.2'), 2), '1.2.3.4');
    assert.equal(clientAddress(request('10.0.0.1', ['1.2.3.4', '10.0.0.2']), 2), '1.2.3.4');
  });

  it('takes only an IP address from the header, else the TCP peer', () => {
    assert.equal(clientAddress(request('10.0.0.1', 'our security team. Call +1-555-0100'), 1), '10.0.0.1');
    assert.equal(clientAddress(request('10.0.0.1', '1.2.3.4:5678'), 1), '10.0.0.1');
    assert.equal(clientAddress(request('10.0.0.1', '2001:db8::1'), 1), '2001:db8::1');
    assert.equal(clientAddress(request('10.0.0.1', 'fe80::1%www.evil-reset.test'), 1), '10.0.0.1');
  });

  it('takes the TCP peer, never a header entry, when the chain is shorter than the trusted hops', () => {
    assert.equal(clientAddress(request('10.0.0.1'), 1), '10.0.0.1');
    // Three proxies expected, one seen: 1.2.3.4 may have been written by the client itself.
    assert.equal(clientAddress(request('10.0.0.1', '1.2.3.4'), 3), '10.0.0.1');
    assert.equal(clientAddress(request('10.0.0.1', '1.2.3.4, 5.6.7.8'), 3), '10.0.0.1');
    assert.equal(clientAddress(request('10.0.0.1', '1.2.3.4, 5.6.7.8'), 2), '1.2.3.4', 'a full chain still reads the n-th hop');
  });
});

import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { clientAddress, clientNetwork } from '../../src/http/client-address.ts';

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

  it('falls back to the leftmost address when the chain is shorter than the trusted hops', () => {
    assert.equal(clientAddress(request('10.0.0.1'), 1), '10.0.0.1');
    assert.equal(clientAddress(request('10.0.0.1', '1.2.3.4'), 3), '1.2.3.4');
  });
});

describe('clientNetwork', () => {
  it('counts IPv4 addresses one by one', () => {
    assert.equal(clientNetwork('203.0.113.7'), '203.0.113.7');
    assert.notEqual(clientNetwork('203.0.113.7'), clientNetwork('203.0.113.8'));
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address', () => {
    assert.equal(clientNetwork('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientNetwork('::FFFF:203.0.113.7'), '203.0.113.7');
  });

  it('counts every IPv6 address of one /64 as one, however it is written', () => {
    const network = '2001:db8:1:2::/64';
    for (const address of ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:9', '2001:DB8:1:2:a::b', '2001:db8:1:2::192.0.2.1']) {
      assert.equal(clientNetwork(address), network, address);
    }
    assert.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientNetwork('::1'), '0:0:0:0::/64');
    assert.equal(clientNetwork('2001:db8:1::'), '2001:db8:1:0::/64');
  });

  it('keeps neighbouring /64s apart', () => {
    assert.notEqual(clientNetwork('2001:db8:1:2::1'), clientNetwork('2001:db8:1:3::1'));
  });

  it('leaves what is not an IP address alone', () => {
    assert.equal(clientNetwork('unknown'), 'unknown');
  });
});

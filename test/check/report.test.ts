import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCheckArgs } from '../../src/check/cli.ts';
import { isInternal, judgeAddress } from '../../src/check/proxy.ts';
import { exitCodeOf, fail, formatTable, pass, skip, warn } from '../../src/check/report.ts';

describe('the check report', () => {
  it('exits 1 on a fail only, and prints what to change under each line', () => {
    const findings = [pass('a', 'fine'), warn('b', 'odd', 'look'), skip('c', 'not run')];
    assert.equal(exitCodeOf(findings), 0, 'warnings and skips pass');
    assert.equal(exitCodeOf([...findings, fail('d', 'bad', 'fix it')]), 1, 'one fail fails');
    const table = formatTable([...findings, fail('d', 'bad', 'fix it')]);
    assert.match(table, /^FAIL {2}d {4} {2}bad\n {9,}change: fix it$/m);
    assert.match(table, /1 pass, 1 warn, 1 fail, 1 skip/);
  });
});

describe('the check command line', () => {
  it('takes a URL, --account NAME:PASSWORD (the password may hold colons), --json and --expect-public-metrics', () => {
    const parsed = parseCheckArgs(['https://a.example', '--account', 'ann:pw:1', '--json', '--expect-public-metrics']);
    assert.ok(typeof parsed !== 'string');
    assert.equal(parsed.url.href, 'https://a.example/');
    assert.deepEqual(parsed.options, { account: { name: 'ann', password: 'pw:1' }, expectPublicMetrics: true });
    assert.equal(parsed.json, true);
  });

  it('refuses no URL, two URLs, another scheme and an --account without a password', () => {
    assert.match(String(parseCheckArgs([])), /one URL/);
    assert.match(String(parseCheckArgs(['https://a.example', 'https://b.example'])), /one URL/);
    assert.match(String(parseCheckArgs(['ftp://a.example'])), /http/);
    assert.match(String(parseCheckArgs(['https://a.example', '--account', 'ann'])), /NAME:PASSWORD/);
    assert.match(String(parseCheckArgs(['https://a.example', '--account'])), /NAME:PASSWORD/);
  });
});

describe('the proxy verdict', () => {
  it('fails the made-up address, passes this machine, warns on an internal stand-in', () => {
    assert.equal(judgeAddress('203.0.113.7', '203.0.113.7', '10.0.0.5', 'x').verdict, 'fail');
    assert.equal(judgeAddress('10.0.0.5', '203.0.113.7', '10.0.0.5', 'x').verdict, 'pass');
    assert.equal(judgeAddress('172.18.0.2', '203.0.113.7', '10.0.0.5', 'x').verdict, 'warn');
    assert.equal(judgeAddress('198.51.100.9', '203.0.113.7', '10.0.0.5', 'x').verdict, 'pass', 'a NAT');
  });

  it('knows internal addresses', () => {
    for (const address of ['127.0.0.2', '10.1.2.3', '192.168.1.1', '172.31.0.1', '::1', 'fd00::1', '::ffff:10.0.0.1']) {
      assert.equal(isInternal(address), true, address);
    }
    for (const address of ['172.32.0.1', '8.8.8.8', '2001:db8::1']) assert.equal(isInternal(address), false, address);
  });
});

import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { checkAccount, parseCheckArgs } from '../../src/check/cli.ts';
import { isInternal, judgeAddress } from '../../src/check/proxy.ts';
import { exitCodeOf, fail, formatTable, markLocal, pass, skip, warn } from '../../src/check/report.ts';

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
  it('takes a URL, --account NAME, --json and --expect-public-metrics', () => {
    const parsed = parseCheckArgs(['https://a.example', '--account', 'ann', '--json', '--expect-public-metrics']);
    assert.ok(typeof parsed !== 'string');
    assert.deepEqual({ ...parsed, url: parsed.url.href }, { url: 'https://a.example/', json: true, accountName: 'ann', expectPublicMetrics: true });
  });

  it('refuses no URL, two URLs, another scheme and an --account without a name', () => {
    assert.match(String(parseCheckArgs([])), /one URL/);
    assert.match(String(parseCheckArgs(['https://a.example', 'https://b.example'])), /one URL/);
    assert.match(String(parseCheckArgs(['ftp://a.example'])), /http/);
    assert.match(String(parseCheckArgs(['https://a.example', '--account'])), /--account takes NAME/);
  });

  it('refuses a password in the command line, where ps and shell history see it', () => {
    const refused = String(parseCheckArgs(['https://a.example', '--account', 'ann:pw:1']));
    assert.match(refused, /CHECK_PASSWORD/);
    assert.match(refused, /standard input/);
  });

  it("reads the account's password from CHECK_PASSWORD, else from the first line of standard input", async () => {
    const piped = (text: string) => Object.assign(Readable.from(text === '' ? [] : [text]), { isTTY: false });
    assert.deepEqual(await checkAccount('ann', { CHECK_PASSWORD: 'pw:1 ' }, piped('other\n')), { name: 'ann', password: 'pw:1 ' });
    assert.deepEqual(await checkAccount('ann', {}, piped('pw:2\r\nrest\n')), { name: 'ann', password: 'pw:2' });
    assert.match(String(await checkAccount('ann', {}, piped(''))), /CHECK_PASSWORD/, 'no password at all');
    const terminal = Object.assign(Readable.from([]), { isTTY: true });
    assert.match(String(await checkAccount('ann', {}, terminal)), /CHECK_PASSWORD/, 'a terminal would show it as typed');
    assert.equal(await checkAccount(null, {}, piped('pw\n')), null, 'no --account: no password read');
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

describe('the check against a local address', () => {
  it('marks the failures a development instance has by design, and only against a loopback address', () => {
    const findings = [fail('transport.https', 'the URL is http', 'serve https'), fail('tokens.forged', 'accepted', 'fix'), pass('clock', 'fine')];
    const local = markLocal(findings, new URL('http://127.0.0.1:8080'));
    assert.match(local[0]!.saw, /\(expected against a local development instance\)$/);
    assert.equal(local[1]!.saw, 'accepted', 'a real fault stays a fault');
    assert.match(formatTable(local), /one failure is expected against a local development instance/);
    assert.deepEqual(markLocal(findings, new URL('https://accounts.example.com')), findings);
    assert.equal(exitCodeOf(local), 1, 'the exit code stays honest');
  });
});

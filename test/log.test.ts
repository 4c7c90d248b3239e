import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBufferedWriter, createLogger, describeError } from '../src/telemetry/log.ts';

describe('createLogger', () => {
  it('writes one JSON line per entry at or above its level', () => {
    const lines: string[] = [];
    const log = createLogger('warn', (line) => lines.push(line));
    log.debug('no');
    log.info('no');
    log.warn('yes', { a: 1 });
    log.error('also');
    assert.equal(lines.length, 2);
    const entry = JSON.parse(lines[0]!);
    assert.deepEqual({ ...entry, time: 'x' }, { time: 'x', level: 'warn', msg: 'yes', a: 1 });
    assert.ok(lines.every((line) => line.endsWith('\n')));
  });

  it('writes an operator\'s command one sentence a line: the level unless info, the fields but a stack, escaped', () => {
    const lines: string[] = [];
    const log = createLogger('info', (line) => lines.push(line), true);
    log.debug('no');
    log.info('embedded postgres started', { port: 5432, dir: '/data' });
    log.error('no account nobody');
    log.warn('failed', { error: 'bad\u2028line', stack: 'Error: at x', code: undefined, counts: { a: 1 } });
    assert.deepEqual(lines, [
      'account-service: embedded postgres started (port: 5432, dir: /data)\n',
      'account-service: error: no account nobody\n',
      'account-service: warn: failed (error: bad\\u2028line, counts: {"a":1})\n',
    ]);
  });

  it('writes the request line as JSON.stringify writes it, escaping the path', () => {
    const lines: string[] = [];
    const log = createLogger('info', (line) => lines.push(line));
    const entry = { request_id: 'a1.b2:c3-d4_e5', method: 'M-SEARCH', path: '/x"\\y\u0001\u00e9', status: 404, ms: 0.3 };
    log.request({ requestId: entry.request_id, method: entry.method, path: entry.path, status: entry.status, ms: entry.ms });
    assert.equal(lines.length, 1);
    const time = (JSON.parse(lines[0]!) as { time: string }).time;
    assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(lines[0], `${JSON.stringify({ time, level: 'info', msg: 'request', ...entry })}\n`);
    createLogger('warn', (line) => lines.push(line)).request({ requestId: 'x', method: 'GET', path: '/', status: 200, ms: 1 });
    assert.equal(lines.length, 1, 'below the level, nothing is written');
  });

  it('escapes what a log viewer could take as a line break or a change of direction, and parses back the same', () => {
    const lines: string[] = [];
    const target = 'a\u2028b\u2029c\u0085d\u009b31m\u202eevil\u202c\u2066x\u2069 é';
    createLogger('info', (line) => lines.push(line)).info('operator action', { target });
    assert.doesNotMatch(lines[0]!, /[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    assert.match(lines[0]!, /a\\u2028b\\u2029c\\u0085d\\u009b31m\\u202eevil\\u202c\\u2066x\\u2069 é/);
    assert.equal(JSON.parse(lines[0]!).target, target);
  });

  it('describes errors with their code and stack, and anything else as text', () => {
    const described = describeError(Object.assign(new Error('boom'), { code: 'E1' }));
    assert.equal(described.error, 'boom');
    assert.equal(described.code, 'E1');
    assert.match(String(described.stack), /boom/);
    assert.deepEqual(describeError('plain'), { error: 'plain' });
  });
});

describe('createBufferedWriter', () => {
  it('writes the lines of one event-loop turn together, and flushes on demand', async () => {
    const chunks: string[] = [];
    const writer = createBufferedWriter((chunk) => chunks.push(chunk));
    writer.write('a\n');
    writer.write('b\n');
    assert.deepEqual(chunks, []);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(chunks, ['a\nb\n']);
    writer.write('c\n');
    writer.flush();
    assert.deepEqual(chunks, ['a\nb\n', 'c\n']);
    writer.flush();
    assert.equal(chunks.length, 2, 'nothing left to write');
  });
});

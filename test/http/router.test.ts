import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchRoute, type Route } from '../../src/http/router.ts';
import { routes } from '../../src/routes/index.ts';

const handler: Route['handler'] = async () => ({ status: 204 });
const doc: Route['doc'] = { summary: 'test', success: { status: 204 }, errors: [] };

describe('matchRoute', () => {
  const table: Route[] = [
    { method: 'GET', path: '/a', handler, doc },
    { method: 'PUT', path: '/a', handler, doc },
    { method: 'POST', path: '/b', handler, doc },
  ];
  it('finds the route for a path and method', () => {
    const match = matchRoute(table, 'PUT', '/a');
    assert.ok(match !== null && 'route' in match && match.route.method === 'PUT');
  });
  it('lists the allowed methods for a known path', () => {
    assert.deepEqual(matchRoute(table, 'DELETE', '/a'), { allow: ['GET', 'PUT'] });
  });
  it('answers null for an unknown path, with no prefix or case folding', () => {
    assert.equal(matchRoute(table, 'GET', '/A'), null);
    assert.equal(matchRoute(table, 'GET', '/a/'), null);
    assert.equal(matchRoute(table, 'GET', '/ab'), null);
  });
  it('serves the three spec endpoints', () => {
    for (const [method, path] of [['POST', '/acc/reg/code'], ['POST', '/acc/reg'], ['PUT', '/acc/me/pwd']] as const) {
      const match = matchRoute(routes, method, path);
      assert.ok(match !== null && 'route' in match, `${method} ${path}`);
    }
  });
});

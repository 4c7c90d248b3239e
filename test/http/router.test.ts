import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRouter, matchRoute, type Route } from '../../src/http/router.ts';
import { routes } from '../../src/routes.ts';

const handler: Route['handler'] = async () => ({ status: 204 });

describe('matchRoute', () => {
  const table: Route[] = [
    { method: 'GET', path: '/a', handler },
    { method: 'PUT', path: '/a', handler },
    { method: 'POST', path: '/b', handler },
  ];
  it('finds the route for a path and method', () => {
    const match = matchRoute(table, 'PUT', '/a');
    assert.ok(match !== null && 'route' in match && match.route.method === 'PUT');
  });
  it('lists the allowed methods for a known path', () => {
    assert.deepEqual(matchRoute(table, 'DELETE', '/a'), { allow: ['GET', 'HEAD', 'PUT'] });
    assert.deepEqual(matchRoute(table, 'GET', '/b'), { allow: ['POST'] });
  });
  it('serves HEAD with the GET route of the path, and only where there is one (RFC 9110 §9.3.2)', () => {
    const head = matchRoute(table, 'HEAD', '/a');
    assert.ok(head !== null && 'route' in head && head.route.method === 'GET');
    assert.deepEqual(matchRoute(table, 'HEAD', '/b'), { allow: ['POST'] });
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

describe('createRouter', () => {
  it('answers every method and path as the walk over the routes does', () => {
    const router = createRouter(routes);
    const paths = [...routes.map((route) => route.path), '/acc/me/sessions/3f1c', '/acc/me/sessions/', '/acc/me/', '/nope', '/', '/ACC/ME'];
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'BREW']) {
      for (const path of paths) assert.deepEqual(router.match(method, path), matchRoute(routes, method, path), `${method} ${path}`);
    }
  });

  it('takes parameters from the path of each request', () => {
    const router = createRouter(routes);
    const first = router.match('DELETE', '/acc/me/sessions/one');
    const second = router.match('DELETE', '/acc/me/sessions/two');
    assert.ok(first !== null && 'params' in first && second !== null && 'params' in second);
    assert.deepEqual([first.params, second.params], [{ id: 'one' }, { id: 'two' }]);
  });
});

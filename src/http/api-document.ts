import { readFileSync } from 'node:fs';
import type { Route } from './router.ts';

type Operation = { responses: Record<string, unknown> };
/** An OpenAPI 3.1 document as this service keeps it: read as it is, never built. */
export type ApiDocument = { info: { version: string }; paths: Record<string, Record<string, Operation>> };

/** The API document of this build, `api/<file>` (shipped beside `src/` and `dist/` alike). */
export function readApiDocument(file: 'openapi.json' | 'admin-openapi.json'): ApiDocument {
  return JSON.parse(readFileSync(new URL(`../../api/${file}`, import.meta.url), 'utf8')) as ApiDocument;
}

/**
 * The document as served: only the operations of `routes` (a feature that is off answers no route
 * and is left out), each route given the statuses its operation lists, which the server warns of
 * any other than.
 */
export function fitDocument(
  document: ApiDocument, routes: readonly Route[],
): { document: ApiDocument; routes: Route[] } {
  const paths: ApiDocument['paths'] = {};
  const fitted = routes.map((route) => {
    const method = route.method.toLowerCase();
    const operation = document.paths[route.path]?.[method];
    if (operation === undefined) throw new Error(`the API document has no ${route.method} ${route.path}`);
    paths[route.path] = { ...paths[route.path], [method]: operation };
    return { ...route, statuses: Object.keys(operation.responses).map(Number) };
  });
  return { document: { ...document, paths }, routes: fitted };
}

import type { Handler } from './router.ts';

/** GET /openapi.json: the OpenAPI 3.1 document of every route, made from the route table at start-up. */
export const getApiDocument: Handler = async (_ctx, deps) => ({ status: 200, body: deps.apiDocument });

/**
 * Every route serve answers, on one router, checked against the route table (api-docs.ts):
 * a route without a doc, or a doc without a route, stops serve at start. GET
 * /api/v1/openapi.json answers the document generated from both (openapi-document.ts).
 */
import type { HandlerSpec } from '../http/http-server.js';
import { routeKey } from '../http/route-doc.js';
import { Router } from '../http/router.js';
import type { ApiDeps } from './api-deps.js';
import { ROUTE_DOCS } from './api-docs.js';
import type { Dashboard } from './dashboard-assets.js';
import { documentRoutes, openApiDocument } from './openapi-document.js';
import { addIpSetRoutes } from './routes-ipsets.js';
import { addReservationRoutes } from './routes-reservations.js';
import { addReadRoutes } from './routes-read.js';
import { addStaticRoutes } from './routes-static.js';
import { addWriteRoutes } from './routes-write.js';

export function apiRouter(deps: ApiDeps, dashboard?: Dashboard): Router<HandlerSpec> {
  const router = new Router<HandlerSpec>();
  addStaticRoutes(router, deps, dashboard);
  addReadRoutes(router, deps);
  addWriteRoutes(router, deps);
  addIpSetRoutes(router, deps);
  addReservationRoutes(router, deps);
  let doc: Record<string, unknown> | undefined;
  router.add('GET', '/api/v1', { access: 'public', run: () => ({ routes: routeIndex(router) }) });
  router.add('GET', '/api/v1/openapi.json', { access: 'public', run: () => (doc ??= apiDocument(router)) });
  documentRoutes(router.routes(), ROUTE_DOCS);
  return router;
}

/** One line per route, "METHOD PATTERN  summary", from the route table. */
export function routeIndex(router: Router<HandlerSpec>): string[] {
  return router.routes().map((r) => `${r.method.padEnd(7)}${r.pattern.padEnd(39)}${ROUTE_DOCS[routeKey(r.method, r.pattern)]?.summary ?? ''}`.trimEnd());
}

/** The version of the API the document describes (its paths' /api/v1), not of podipam: the committed document changes only with the API. */
export const API_VERSION = 'v1';

/** The OpenAPI document of `router`'s routes. */
export function apiDocument(router: Router<HandlerSpec>): Record<string, unknown> {
  return openApiDocument(router.routes(), ROUTE_DOCS, API_VERSION);
}

/**
 * The document as docs/openapi.json holds it (`npm run docs:openapi`): the routes registered
 * without a server behind them (registration reads no dependency), pretty-printed.
 */
export function openApiText(): string {
  const none = { page: { body: Buffer.alloc(0), contentType: 'text/html', etag: '""' }, assets: new Map() } as unknown as Dashboard;
  return `${JSON.stringify(apiDocument(apiRouter({} as ApiDeps, none)), null, 2)}\n`;
}

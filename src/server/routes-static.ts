/**
 * Routes that are not the JSON resource API: the dashboard page and its assets (public: they
 * carry no data), /healthz (public), /metrics (read token), /api/v1/whoami (public: tells
 * the dashboard whether to ask for a token) and /api/v1 (an index of the routes).
 */
import type { ApiDeps } from './api-deps.js';
import { authRequired } from './auth.js';
import { DatastoreProbe } from './datastore-probe.js';
import { APP_JS } from './dashboard/app-js.js';
import { PAGE_HTML } from './dashboard/page-html.js';
import { STYLE_CSS } from './dashboard/style-css.js';
import { HttpError } from './http-error.js';
import { RawResponse, type HandlerSpec } from './http-server.js';
import type { Router } from './router.js';

/** Every route of the API, for GET /api/v1 and the README. */
export const API_INDEX: readonly string[] = [
  'GET    /api/v1/overview                       totals and per-pool figures',
  'GET    /api/v1/pools                          pools with capacity, allocated, blocks',
  'POST   /api/v1/pools                          {name, cidr, blockSize?, nodeSelector?, disabled?}',
  'GET    /api/v1/pools/:name',
  'PATCH  /api/v1/pools/:name                    {disabled}',
  'DELETE /api/v1/pools/:name                    refused while addresses are allocated',
  'GET    /api/v1/pools/:name/blocks             compact block map of the pool',
  'GET    /api/v1/blocks?pool=&node=&limit=&after=',
  'GET    /api/v1/blocks/:cidr                   one block with its allocations (cidr URL-encoded)',
  'GET    /api/v1/nodes?q=&limit=&after=         nodes with pod CIDRs, block and address counts',
  'POST   /api/v1/nodes                          {name, labels?}',
  'GET    /api/v1/nodes/:name',
  'DELETE /api/v1/nodes/:name',
  'GET    /api/v1/allocations?node=&pool=&handle=&limit=&after=',
  'POST   /api/v1/allocations                    {node, containerId, network?, ifname?, pools?, ips?} or {node, handle, …}',
  'DELETE /api/v1/allocations/:handle            release everything the handle holds',
  'POST   /api/v1/release                        {ip} or {handle}',
  'GET    /api/v1/check                          {leaks, problems}',
  'GET    /api/v1/whoami                         {role, authRequired}',
  'GET    /healthz',
  'GET    /metrics                               Prometheus text format',
];

const text = (type: string, body: string): RawResponse =>
  new RawResponse(200, type, body, { 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });

export function addStaticRoutes(r: Router<HandlerSpec>, d: ApiDeps): void {
  const page = (): RawResponse =>
    new RawResponse(200, 'text/html; charset=utf-8', PAGE_HTML, {
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'",
    });
  r.add('GET', '/', { access: 'public', run: page });
  r.add('GET', '/index.html', { access: 'public', run: page });
  r.add('GET', '/assets/app.js', { access: 'public', run: () => text('text/javascript; charset=utf-8', APP_JS) });
  r.add('GET', '/assets/style.css', { access: 'public', run: () => text('text/css; charset=utf-8', STYLE_CSS) });

  // Bounded: answers within ~50 ms whatever the datastore does (see DatastoreProbe).
  const probe = new DatastoreProbe(() => d.ops.probe());
  r.add('GET', '/healthz', {
    access: 'public',
    run: async () => {
      const h = await probe.health();
      if (h.state === 'failed') throw new HttpError(503, 'datastore_unavailable', `datastore ${d.datastoreUrl} does not answer: ${h.error}`);
      return {
        status: 'ok',
        datastore: h.state,
        ...(h.state === 'slow' ? { datastoreWaitingMs: h.waitingMs } : {}),
        uptimeSeconds: Math.round((Date.now() - d.startedAt.getTime()) / 1000),
        loops: d.loops(),
      };
    },
  });

  r.add('GET', '/metrics', {
    run: async () => {
      const m = await d.metrics.scrape();
      return new RawResponse(200, m.contentType, m.body);
    },
  });

  r.add('GET', '/api/v1/whoami', {
    access: 'public',
    run: (c) => ({ role: c.role, authRequired: authRequired(d.tokens), datastore: c.role === 'none' ? undefined : d.datastoreUrl }),
  });
  r.add('GET', '/api/v1', { access: 'public', run: () => ({ routes: API_INDEX }) });
}

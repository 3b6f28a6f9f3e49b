/**
 * Routes that are not the JSON resource API: the dashboard page and its assets (public: they
 * carry no data), /healthz (public), /metrics (read token), /api/v1/whoami (public: tells
 * the dashboard whether to ask for a token). /api/v1 (the index) and /api/v1/openapi.json: api-router.ts.
 *
 * The dashboard is read from the build at start (dashboard-assets.ts). The page is revalidated
 * on every load (`no-cache` + ETag, 304 when unchanged); its assets carry a content hash in
 * their names (/assets/app-HASH.js, /assets/style-HASH.css), so they are `immutable`.
 */
import type { ApiDeps } from './api-deps.js';
import { authRequired } from '../http/auth.js';
import { DatastoreProbe } from './datastore-probe.js';
import { type Dashboard, type DashboardFile, etagMatches, loadDashboard } from './dashboard-assets.js';
import { HttpError } from '../http/http-error.js';
import { type Ctx, RawResponse, type HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';

/** The page's security headers: no framing, and nothing runs or loads but this server's own files. */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'",
};
const ASSET_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'public, max-age=31536000, immutable',
  'x-content-type-options': 'nosniff',
};

/** The file, or 304 with its validator when the browser's copy is current. */
function serveFile(c: Ctx, f: DashboardFile, headers: Readonly<Record<string, string>>): RawResponse {
  const h = { ...headers, etag: f.etag };
  const ifNoneMatch = c.headers['if-none-match'];
  if (etagMatches(ifNoneMatch, f.etag)) return new RawResponse(304, f.contentType, '', h);
  return new RawResponse(200, f.contentType, f.body, { ...h, 'content-length': String(f.body.length) });
}

/** Registers every route of this file; `dashboard` defaults to the built one (throws when the build lacks it). */
export function addStaticRoutes(r: Router<HandlerSpec>, d: ApiDeps, dashboard: Dashboard = loadDashboard()): void {
  const page = { access: 'public', run: (c: Ctx) => serveFile(c, dashboard.page, PAGE_HEADERS) } as const;
  r.add('GET', '/', page);
  r.add('GET', '/index.html', page);
  r.add('GET', '/assets/:file', {
    access: 'public',
    run: (c) => {
      const f = dashboard.assets.get(c.params.file as string);
      if (!f) throw new HttpError(404, 'not_found', `no such asset: /assets/${c.params.file as string} (the page names its assets; reload it)`);
      return serveFile(c, f, ASSET_HEADERS);
    },
  });

  // Bounded: answers within ~50 ms whatever the datastore does (see DatastoreProbe).
  const probe = new DatastoreProbe(() => d.ipam.probe());
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
}

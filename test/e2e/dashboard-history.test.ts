/**
 * The dashboard's history in headless Chromium (Debian's chromium driven by playwright-core):
 * serve's HTTP API and dashboard in process (the real router, routes, built page and assets) on
 * a memory datastore with three allocated addresses and a real history file filled through
 * apply() (test/helpers/history-fixture.ts). Searching an address shows its timeline (holders in
 * order, bounds as bounds, the gap marked); a pod shows its addresses; a block's address links to
 * its history; a server without history says so. A screenshot goes to test-output/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { ClusterIpam } from '../../src/cluster/index.js';
import type { HistoryDb } from '../../src/history/history-db.js';
import { openHistoryDb } from '../../src/history/sqlite-history-db.js';
import type { ApiDeps } from '../../src/server/api/api-deps.js';
import { addReadRoutes } from '../../src/server/api/routes-read.js';
import { addStaticRoutes } from '../../src/server/api/routes-static.js';
import { addWriteRoutes } from '../../src/server/api/routes-write.js';
import { CheckCache } from '../../src/server/check/check-cache.js';
import { createHttpServer, type HandlerSpec } from '../../src/server/http/http-server.js';
import { ServerMetrics } from '../../src/server/http/metrics.js';
import { hostPolicy } from '../../src/server/http/request-guard.js';
import { Router } from '../../src/server/http/router.js';
import { SummaryCache } from '../../src/server/summary/cluster-summary.js';
import { openStore, type Store } from '../../src/store/index.js';
import { fillHistory } from '../helpers/history-fixture.js';
import { REPO_ROOT } from '../helpers/plugin.js';
import { requireExecutable } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';

const OUT = join(REPO_ROOT, 'test-output');
const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'install-token-of-the-dashboard-history-test';

/** serve's HTTP side in process, as start-server.ts composes it, with `history` (or none). */
async function serve(store: Store, history: HistoryDb | undefined): Promise<{ url: string; server: Server }> {
  const ipam = new ClusterIpam(store);
  const summary = new SummaryCache(store, 200);
  const deps: ApiDeps = {
    store,
    datastoreUrl: store.url,
    summary,
    ipam,
    checks: new CheckCache(() => ipam.check()),
    metrics: new ServerMetrics({
      pools: async () => (await summary.get()).pools,
      nodes: async () => (await summary.get()).totals.nodes,
      datastoreUp: async () => true,
    }),
    tokens: { install: TOKEN },
    startedAt: new Date(),
    loops: () => ({}),
    ...(history ? { history } : {}),
  };
  const router = new Router<HandlerSpec>();
  addStaticRoutes(router, deps);
  addReadRoutes(router, deps);
  addWriteRoutes(router, deps);
  const server = createHttpServer({ router, tokens: deps.tokens, hostPolicy: hostPolicy('127.0.0.1') });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

test("dashboard: an address's history timeline, a pod's addresses, a block's address links to its history", { timeout: 90_000 }, async () => {
  requireExecutable(CHROMIUM);
  mkdirSync(OUT, { recursive: true });
  const dir = makeTempDir('dash-history');
  const store = await openStore('memory:dashboard-history');
  const servers: Server[] = [];
  let history: HistoryDb | undefined;
  let browser: Browser | undefined;
  try {
    await new ClusterIpam(store).createPool({ name: 'v4', cidr: '10.244.0.0/24', blockSize: 26 });
    // Serve once to allocate through the API (the addresses the block list will show).
    const probe = await serve(store, undefined);
    servers.push(probe.server);
    const ips: string[] = [];
    for (const cid of ['c-1', 'c-2', 'c-3']) {
      const r = await fetch(`${probe.url}/api/v1/allocations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ node: 'node-a', containerId: cid }),
      });
      const body = (await r.json()) as { ips: string[] };
      assert.equal(r.status, 201, JSON.stringify(body));
      ips.push(body.ips[0] as string);
    }
    const [a, b, c] = ips as [string, string, string];
    const file = join(dir.path, 'history.db');
    const w = openHistoryDb(file);
    fillHistory(w, { a, b, c });
    w.close();
    history = openHistoryDb(file, { readonly: true });
    const s = await serve(store, history);
    servers.push(s.server);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${s.url}/?token=${TOKEN}`);
    await page.waitForSelector('[data-stat="allocated"][data-value="3"]');

    // An address: its holders in time order, the gap where it happened, bounds as bounds.
    await page.fill('#search-input', a);
    await page.click('#search-form button');
    await page.waitForSelector('#history-result[data-holds="3"]');
    assert.equal(await page.locator('#history-result').getAttribute('data-gaps'), '1');
    const rows = page.locator('#history-result .tl-row');
    assert.equal(await rows.count(), 4);
    const texts = await rows.allTextContents();
    assert.match(texts[0] ?? '', /^2026-03-01 10:00:00Z → 2026-03-01 11:00:00Z shop\/web-1 on node-a uid u1del$/);
    assert.match(texts[1] ?? '', /^2026-03-01 12:00:00Z → between 2026-03-01 13:00:00Z and 2026-03-01 14:00:00Z shop\/web-2 on node-a uid u2unknown$/);
    assert.match(texts[2] ?? '', /^2026-03-01 13:00:00Z → 2026-03-01 14:00:00Z gap: unknown — etcd compacted revisions 31-39$/);
    assert.match(texts[3] ?? '', /^between 2026-03-01 13:00:00Z and 2026-03-01 14:00:00Z → still held shop\/web-3 on node-b uid u3held$/);
    assert.deepEqual(await page.locator('#history-result .tl-row.hold').evaluateAll((es) => es.map((e) => e.getAttribute('data-why'))), ['del', 'unknown', '']);
    assert.equal(await page.locator('#history-result .tl-bar.fuzzy-end').count(), 1);
    assert.equal(await page.locator('#history-result .tl-bar.fuzzy-start.open').count(), 1);
    assert.equal(await page.locator('#history-result .tl-bar.gap').count(), 1);
    // The current holder is shown above it, as before.
    await page.waitForSelector('#search-result[data-found="1"]');
    await page.screenshot({ path: join(OUT, 'dashboard-history.png'), fullPage: true });

    // A pod: every address it had (two incarnations).
    await page.fill('#search-input', 'shop/web-1');
    await page.click('#search-form button');
    await page.waitForSelector('#history-result[data-holds="2"]');
    assert.deepEqual(await page.locator('#history-result .tl-row.hold').evaluateAll((es) => es.map((e) => e.getAttribute('data-address'))), [a, b]);

    // A block's address list links to each address's history.
    await page.locator('#block-map .cell:not(.free)').first().click();
    await page.waitForSelector('#block-detail a.history-link');
    assert.equal(await page.locator('#block-detail a.history-link').count(), 3);
    await page.locator(`#block-detail tr[data-ip="${b}"] a.history-link`).click();
    await page.waitForFunction((ip) => document.querySelector('#history-result h3')?.textContent === `History of ${ip}`, b);
    await page.waitForSelector('#history-result[data-holds="1"]');
    assert.equal(await page.inputValue('#search-input'), b);
    assert.equal(await page.locator('#history-result .tl-row.gap').count(), 1, 'the gap of the history, before this hold');
    assert.match(
      (await page.locator('#history-result .tl-row.hold').first().textContent()) ?? '',
      /2026-03-01 15:00:00Z → 2026-03-01 16:00:00Z shop\/web-1 .*uid u1bcni-gc/,
    );

    // A server without history says so.
    const off = await serve(store, undefined);
    servers.push(off.server);
    await page.goto(`${off.url}/?token=${TOKEN}`);
    await page.fill('#search-input', a);
    await page.click('#search-form button');
    await page.waitForFunction(() => /No history: history is off/.test(document.getElementById('history-result')?.textContent ?? ''));
    assert.deepEqual(pageErrors, []);
  } finally {
    await browser?.close();
    for (const srv of servers) {
      srv.closeAllConnections();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    }
    history?.close();
    await store.close();
    dir.remove();
  }
});

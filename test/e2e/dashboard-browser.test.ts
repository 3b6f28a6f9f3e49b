/**
 * The dashboard in headless Chromium (Debian's chromium driven by playwright-core): start
 * `serve`, drive it with `podipam simulate`, check that the numbers on the page equal the
 * API's, click a block, watch a live update arrive without reload, release a leak from the
 * page, and save screenshots under test-output/. Also: the page and its bundled assets carry
 * their cache headers and the CSP; a node whose agent keeps a warm pool shows its idle and
 * in-use addresses (a real `podipam agent` on serve's datastore, pods added through the shim).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { openStore } from '../../src/store/index.js';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, type PluginCall, REPO_ROOT, runPlugin } from '../helpers/plugin.js';
import { requireExecutable } from '../helpers/prereq.js';
import { handleKey } from './serve-keys.js';
import { api, runCli, startServe, waitFor } from './serve-harness.js';

const OUT = join(REPO_ROOT, 'test-output');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * One Chromium for the whole file (its launch is the slow part), closed after the last test;
 * each test has its own context: its own cache, cookies and storage, as a fresh browser has.
 */
let browser: Browser | undefined;
async function newContext(options: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  return browser.newContext(options);
}
after(async () => {
  await browser?.close();
});

async function attr(page: Page, selector: string, name: string): Promise<string | null> {
  return page.locator(selector).first().getAttribute(name);
}

test('dashboard: numbers equal the API, blocks open, updates arrive live, a leak is released from the page', { timeout: 120_000 }, async () => {
  requireExecutable(CHROMIUM);
  mkdirSync(OUT, { recursive: true });
  const s = await startServe();
  let context: BrowserContext | undefined;
  try {
    // The dashboard URL serve printed carries the install token that writes need.
    const sim = await runCli([
      'simulate',
      '--server',
      s.url,
      '--data-dir',
      s.dataDir,
      '--nodes',
      '8',
      '--pods',
      '160',
      '--churn',
      '0.25',
      '--seed',
      '7',
      '--concurrency',
      '4',
      '--progress',
    ]);
    assert.equal(sim.code, 0, sim.stderr);
    assert.match(sim.stdout, /8 nodes joined, 200 pods added, 40 deleted, 0 failed/);
    assert.match(sim.stderr, /simulate \[#+\] 100% 248\/248/, 'the progress bar reached the end');

    context = await newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(m.text());
    });
    page.on('dialog', (d) => void d.accept());
    await page.goto(s.dashboardUrl);
    assert.equal(await page.title(), 'podipam');
    // The page keeps the install token and drops it from the address bar.
    assert.equal(await page.evaluate(() => localStorage.getItem('podipam.token')), s.installToken);
    assert.equal(page.url(), s.url + '/');
    await page.waitForSelector('[data-stat="allocated"][data-value]');
    await page.waitForSelector('#block-map .cell:not(.free)');
    await page.waitForSelector('#nodes tr[data-node]');
    await page.waitForSelector('[data-stat="issues"][data-value]');
    // One rule for big counts on the page and in the CLI: the IPv6 pool's usable 31*2^67, not "2^72".
    const v6 = (await runCli(['--datastore', s.datastore, 'ipam', 'show'])).stdout.split('\n').find((l) => l.startsWith('default-ipv6')) ?? '';
    assert.match(v6, /\s31\*2\^67\s/, v6);
    assert.match((await page.locator('#pools').textContent()) ?? '', /of 31\*2\^67 addresses/);

    // Totals and pools, as the API reports them.
    const ov = (await api(s.url, 'GET', '/api/v1/overview')).body;
    assert.equal(ov.totals.allocated, 320, '160 pods, one v4 and one v6 address each');
    for (const k of ['pools', 'nodes', 'blocks', 'allocated'] as const) {
      assert.equal(await attr(page, `[data-stat="${k}"]`, 'data-value'), String(ov.totals[k]), `stat ${k}`);
    }
    assert.equal(await page.locator('[data-stat="allocated"]').textContent(), '320');
    assert.equal(await attr(page, '[data-stat="issues"]', 'data-value'), '0');
    for (const p of ov.pools) {
      const card = `.pool[data-pool="${p.name}"]`;
      assert.equal(await attr(page, card, 'data-allocated'), String(p.allocated), `pool ${p.name} allocated`);
      assert.equal(await attr(page, card, 'data-blocks'), String(p.blocks), `pool ${p.name} blocks`);
      assert.equal(await page.locator(`${card} .allocated`).textContent(), p.allocated.toLocaleString('en-US'));
    }
    // Nodes: every row's address count.
    const nodes = (await api(s.url, 'GET', '/api/v1/nodes?limit=50')).body;
    assert.equal(await page.locator('#nodes tr[data-node]').count(), nodes.items.length);
    for (const n of nodes.items) assert.equal(await attr(page, `#nodes tr[data-node="${n.name}"]`, 'data-allocated'), String(n.allocated), `node ${n.name}`);
    // The block map of the first (selected) pool: one coloured cell per claimed block, 1024 slots in all.
    const map = (await api(s.url, 'GET', '/api/v1/pools/default-ipv4/blocks')).body;
    assert.equal(await page.locator('#block-map .cell:not(.free)').count(), map.claimed);
    assert.equal(await page.locator('#block-map .cell').count(), 1024);

    // Click through a block: the panel shows the API's allocations of that block.
    const cell = page.locator('#block-map .cell:not(.free)').nth(2);
    const cidr = (await cell.getAttribute('data-block')) as string;
    await cell.hover();
    await page.waitForSelector('#tooltip:not([hidden])');
    assert.match((await page.locator('#tooltip').textContent()) ?? '', new RegExp(`${cidr.replace(/\./g, '\\.')}.*sim-\\d+ · \\d+ / 61 used`));
    await cell.click();
    await page.waitForSelector(`#block-detail[data-block="${cidr}"]`);
    const block = (await api(s.url, 'GET', `/api/v1/blocks/${encodeURIComponent(cidr)}`)).body;
    assert.equal(await attr(page, '#block-detail .block-allocated', 'data-value'), String(block.allocated));
    assert.equal(await page.locator('#block-detail tbody tr').count(), block.allocations.length);
    assert.equal(await attr(page, `#block-map .cell[data-block="${cidr}"]`, 'data-node'), block.node);
    await page.screenshot({ path: join(OUT, 'dashboard.png'), fullPage: true });

    // A pod added through the API shows up without a reload.
    const added = await api(s.url, 'POST', '/api/v1/allocations', { node: 'sim-1', containerId: 'live-update', network: 'sim' });
    assert.equal(added.status, 201);
    await page.waitForSelector('[data-stat="allocated"][data-value="322"]', { timeout: 8000 });

    // A leak appears in the check panel; the admin releases it with one click.
    const store = await openStore(s.datastore);
    try {
      const h = await store.get(handleKey('sim:live-update:eth0'));
      assert.ok(h);
      assert.ok((await store.txn([{ key: h.key, rev: h.rev }], [{ type: 'delete', key: h.key }])).succeeded);
    } finally {
      await store.close();
    }
    // The check report is shared and reused for a few seconds; ask for a fresh one, then reload.
    assert.equal((await api(s.url, 'GET', '/api/v1/check?maxAge=0')).body.leaks.length, 2);
    await page.reload();
    await page.waitForSelector('.issue[data-kind="leak"]');
    assert.equal(await page.locator('.issue[data-kind="leak"]').count(), 2);
    assert.equal(await attr(page, '[data-stat="issues"]', 'data-value'), '2');
    await page.screenshot({ path: join(OUT, 'dashboard-leak.png'), fullPage: true });
    await page.locator('.issue[data-kind="leak"] button').first().click();
    await page.waitForFunction(() => document.querySelectorAll('.issue[data-kind="leak"]').length === 1);
    await page.locator('.issue[data-kind="leak"] button').first().click();
    await page.waitForSelector('#check .allgood');
    const check = (await api(s.url, 'GET', '/api/v1/check?maxAge=0')).body;
    assert.deepEqual(check.leaks, []);

    // Nodes known from their blocks only are explained: a pod on a node that never had a record
    // (unregistered: GC leaves it alone) and a node whose record was deleted (GC frees it).
    assert.equal((await api(s.url, 'POST', '/api/v1/allocations', { node: 'newcomer', containerId: 'new-0', network: 'sim' })).status, 201);
    assert.equal((await api(s.url, 'DELETE', '/api/v1/nodes/sim-2')).status, 200);
    const kinds = (await api(s.url, 'GET', '/api/v1/check?maxAge=0')).body.problems.map((p: { kind: string }) => p.kind);
    assert.ok(kinds.includes('block-node-unregistered') && kinds.includes('block-node-deleted'), JSON.stringify(kinds));
    await page.reload();
    await page.waitForSelector('#nodes tr[data-node="newcomer"] [data-badge="unregistered"]');
    assert.match(
      (await attr(page, '#nodes tr[data-node="newcomer"] [data-badge="unregistered"]', 'title')) ?? '',
      /cluster GC leaves its blocks alone.*podipam node add newcomer.*podipam node delete newcomer --gone/,
    );
    assert.match(
      (await attr(page, '#nodes tr[data-node="sim-2"] [data-badge="deleted"]', 'title')) ?? '',
      /record deleted .*cluster GC frees its pods' addresses and blocks after its grace period/,
    );
    await page.waitForSelector('.issue[data-kind="problem"]');
    const panel = (await page.textContent('#check')) ?? '';
    assert.match(panel, /block node unregistered.*"newcomer", which has no record and no proof of deletion: cluster GC will not free it/s);
    assert.match(panel, /block node deleted.*"sim-2", whose record was deleted \(by api at /s);
    await page.screenshot({ path: join(OUT, 'dashboard-node-proof.png'), fullPage: true });

    // The IPv6 pool's map draws only its claimed blocks (2^66 slots).
    await page.locator('.pool[data-pool="default-ipv6"]').click();
    await page.waitForFunction(() => /default-ipv6/.test(document.getElementById('map-pool')?.textContent ?? ''));
    const map6 = (await api(s.url, 'GET', '/api/v1/pools/default-ipv6/blocks')).body;
    assert.equal(map6.slots, null);
    await page.waitForFunction((n) => document.querySelectorAll('#block-map .cell').length === n, map6.claimed);
    assert.equal(await page.locator('#block-map .cell.free').count(), 0);
    assert.deepEqual(pageErrors, []);
  } finally {
    await context?.close();
    await s.stop();
  }
});

test('dashboard: with tokens the page asks for one and shows data once given the read token', { timeout: 60_000 }, async () => {
  requireExecutable(CHROMIUM);
  const { makeTempDir } = await import('../helpers/tmp.js');
  const { writeFileSync } = await import('node:fs');
  const d = makeTempDir('dash-tokens');
  writeFileSync(join(d.path, 'tokens'), 'read=read-0123456789abcdef\nadmin=admin-0123456789abcdef\n', { mode: 0o600 });
  const s = await startServe({ args: ['--token-file', join(d.path, 'tokens'), '--no-controller'] });
  let context: BrowserContext | undefined;
  try {
    context = await newContext();
    const page = await context.newPage();
    await page.goto(s.url + '/');
    await page.waitForSelector('#token-banner:not([hidden])');
    assert.equal(await page.textContent('#live-text'), 'token needed');
    await page.fill('#token-input', 'read-0123456789abcdef');
    await page.click('#token-form button');
    await page.waitForSelector('[data-stat="pools"][data-value="2"]');
    assert.ok(await page.isHidden('#token-banner'));
    assert.equal(await page.evaluate(() => localStorage.getItem('podipam.token')), 'read-0123456789abcdef');
  } finally {
    await context?.close();
    await s.stop();
    d.remove();
  }
});

test('dashboard: the page revalidates (no-cache, ETag, 304), its hashed assets are immutable, the CSP holds', { timeout: 60_000 }, async () => {
  requireExecutable(CHROMIUM);
  const s = await startServe({ args: ['--no-controller'] });
  let context: BrowserContext | undefined;
  try {
    const page0 = await fetch(`${s.url}/`);
    assert.equal(page0.status, 200);
    assert.equal(page0.headers.get('cache-control'), 'no-cache');
    assert.equal(
      page0.headers.get('content-security-policy'),
      "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'",
    );
    const etag = page0.headers.get('etag');
    assert.match(etag ?? '', /^"[A-Za-z0-9_-]+"$/);
    assert.equal((await fetch(`${s.url}/`, { headers: { 'if-none-match': etag as string } })).status, 304);
    const html = await page0.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
    assert.deepEqual(assets.map((a) => a.replace(/-[A-Z0-9]{8}\./, '-HASH.')).sort(), ['/assets/app-HASH.js', '/assets/style-HASH.css']);
    for (const a of assets) {
      const r = await fetch(s.url + a);
      assert.equal(r.status, 200, a);
      assert.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable', a);
      assert.equal((await fetch(s.url + a, { headers: { 'if-none-match': r.headers.get('etag') as string } })).status, 304, a);
    }

    // In the browser: a reload revalidates the page (304) and takes the assets from the cache.
    context = await newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text()); // a CSP violation is reported here
    });
    const conditional: (string | undefined)[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/') void r.allHeaders().then((h) => conditional.push(h['if-none-match']));
    });
    await page.goto(`${s.url}/`); // reads need no token; the cache keys the page by its URL
    await page.waitForSelector('[data-stat="pools"][data-value="2"]');
    const served = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname));
    for (const a of assets) assert.ok(served.includes(a), `the page loaded ${a}: ${served.join(' ')}`);
    await page.reload();
    await page.waitForSelector('[data-stat="pools"][data-value="2"]');
    await waitFor('both page requests seen', 5000, async () => (conditional.length === 2 ? true : undefined));
    assert.deepEqual(conditional, [undefined, etag], 'the reload asked with the ETag');
    const nav = await page.evaluate(() => {
      const n = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
      return { transferSize: n.transferSize, bodySize: n.encodedBodySize };
    });
    assert.ok(nav.bodySize > 0 && nav.transferSize < nav.bodySize, `the page's body was not sent again (304): ${JSON.stringify(nav)}`);
    const reloaded = await page.evaluate(() =>
      performance
        .getEntriesByType('resource')
        .filter((e) => /\/assets\//.test(e.name))
        .map((e) => [new URL(e.name).pathname, (e as PerformanceResourceTiming).transferSize] as const),
    );
    assert.deepEqual(reloaded.map(([path]) => path).sort(), [...assets].sort());
    for (const [path, size] of reloaded) assert.equal(size, 0, `${path} came from the cache after the reload`);
    assert.deepEqual(problems, []);
  } finally {
    await context?.close();
    await s.stop();
  }
});

test('dashboard: a node whose agent keeps a warm pool shows its idle and in-use addresses, live', { timeout: 180_000 }, async () => {
  requireExecutable(CHROMIUM);
  requireShim();
  const s = await startServe({ args: ['--no-controller'] });
  const { makeTempDir } = await import('../helpers/tmp.js');
  const d = makeTempDir('dash-warm');
  let agent: RunningAgent | undefined;
  let context: BrowserContext | undefined;
  try {
    // The node agent on serve's own datastore, keeping 4 idle addresses per family (the default pools are v4 and v6).
    const socket = join(d.path, 'run', 'agent.sock');
    agent = await startAgent(socket, [
      '--node',
      'wnode',
      '--datastore',
      s.datastore,
      '--data-dir',
      join(d.path, 'agent'),
      '--min-idle',
      '4',
      '--max-idle',
      '4',
      '--capacity',
      '16',
      '--cooldown',
      '1s',
    ]);
    const a = agent;
    const call = (command: string, pod: number): PluginCall => ({
      command,
      containerId: `wpod${pod}`,
      ifname: 'eth0',
      config: { cniVersion: '1.0.0', name: 'warm-net', ipam: { type: 'podipam', agent: socket } },
      env: { PODIPAM_PLUGIN: '' },
    });
    /** Waits until the pool is settled (4 idle per family, nothing pending, every pod record written); returns idle and in use as the agent counts them. */
    const settled = async (): Promise<{ idle: number; inUse: number }> => {
      for (let i = 0; ; i++) {
        const w = (await a.status()).warmPool;
        const pools = Object.values(w?.pools ?? {});
        if (w?.ready && pools.length === 2 && w.writeBehindDepth === 0 && pools.every((p) => p.idle === 4 && p.pending === 0 && p.returning === 0)) {
          return { idle: pools.reduce((n, p) => n + p.idle, 0), inUse: pools.reduce((n, p) => n + p.inUse, 0) };
        }
        assert.ok(i < 600, `warm pool did not settle: ${JSON.stringify(w)}\n${a.log()}`);
        await sleep(50);
      }
    };
    for (let pod = 0; pod < 3; pod++) {
      const r = await runPlugin(SHIM_BIN, call('ADD', pod));
      assert.equal(r.code, 0, `ADD ${pod}: ${r.stdout} ${r.stderr}`);
    }
    const agent1 = await settled();
    assert.deepEqual(agent1, { idle: 8, inUse: 6 }, 'three dual-stack pods in use, 4 idle per family');
    // The API agrees (its summary is reused for about a second: wait for a fresh one).
    const node1 = await waitFor('the API to count the warm pool', 15_000, async () => {
      const n = (await api(s.url, 'GET', '/api/v1/nodes/wnode')).body;
      return n.idle === agent1.idle && n.inUse === agent1.inUse ? n : undefined;
    });
    assert.equal(node1.allocated, 14);

    context = await newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(s.dashboardUrl);
    const row = '#nodes tr[data-node="wnode"]';
    await page.waitForSelector(`${row}[data-in-use="6"][data-idle="8"][data-allocated="14"]`, { timeout: 15_000 });
    assert.equal(await page.locator(`${row} td.use .in-use`).textContent(), '6');
    assert.equal(await page.locator(`${row} td.use .idle`).textContent(), '8');
    // The bar splits the node's addresses 6 : 8.
    const widths = await page.locator(`${row} .ubar > span`).evaluateAll((spans) => spans.map((x) => (x as HTMLElement).style.width));
    assert.deepEqual(widths, [`${((100 * 6) / 14).toFixed(2)}%`, `${((100 * 8) / 14).toFixed(2)}%`]);
    await page.screenshot({ path: join(OUT, 'dashboard-warm-pool.png'), fullPage: true });

    // A pod deleted: the page follows without a reload (in use 4; the pool settles back at 4 idle per family).
    const del = await runPlugin(SHIM_BIN, call('DEL', 1));
    assert.equal(del.code, 0, del.stdout + del.stderr);
    const agent2 = await settled();
    assert.equal(agent2.inUse, 4);
    await page.waitForSelector(`${row}[data-in-use="${agent2.inUse}"][data-idle="${agent2.idle}"]`, { timeout: 30_000 });
    const node2 = (await api(s.url, 'GET', '/api/v1/nodes/wnode')).body;
    assert.deepEqual([node2.inUse, node2.idle, node2.allocated], [agent2.inUse, agent2.idle, agent2.inUse + agent2.idle]);
    // A node without an agent counts everything in use.
    const added = await api(s.url, 'POST', '/api/v1/allocations', { node: 'plain', containerId: 'plain-1', network: 'plain' });
    assert.equal(added.status, 201);
    await page.waitForSelector('#nodes tr[data-node="plain"][data-in-use="2"][data-idle="0"]', { timeout: 15_000 });
    assert.deepEqual(pageErrors, []);
  } finally {
    await context?.close();
    await agent?.stop();
    await s.stop();
    d.remove();
  }
});

test('dashboard: the search finds a pod by namespace/name, by name and by address, and shows its holder', { timeout: 90_000 }, async () => {
  requireExecutable(CHROMIUM);
  const s = await startServe({ args: ['--no-controller'] });
  const { makeTempDir } = await import('../helpers/tmp.js');
  const d = makeTempDir('dash-search');
  let context: BrowserContext | undefined;
  try {
    // A pod started through the plugin in cluster mode on serve's datastore: its handle names it.
    const r = await runPlugin(PODIPAM_BIN, {
      command: 'ADD',
      containerId: 'search-1',
      ifname: 'eth0',
      args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1;K8S_POD_UID=u1',
      config: { cniVersion: '1.0.0', name: 'net', ipam: { type: 'podipam', datastore: s.datastore, nodeName: 'snode', cacheDir: join(d.path, 'cache') } },
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const [v4, v6] = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((x) => x.address.split('/')[0]!);
    const pod = (await api(s.url, 'GET', '/api/v1/pods/shop/web-1')).body;
    assert.deepEqual(
      pod.items.map((h: { handle: string; node: string }) => [h.handle, h.node]),
      [['net:search-1:eth0', 'snode']],
    );

    context = await newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(s.dashboardUrl);
    const find = async (q: string): Promise<string> => {
      await page.evaluate(() => document.getElementById('search-result')?.replaceChildren());
      await page.fill('#search-input', q);
      await page.click('#search-form button');
      await page.waitForFunction(() => (document.getElementById('search-result')?.childElementCount ?? 0) > 0);
      return (await page.textContent('#search-result')) ?? '';
    };
    for (const q of ['shop/web-1', 'web-1', v4!, v6!]) {
      const text = await find(q);
      assert.equal(await attr(page, '#search-result', 'data-found'), '1', `${q}: ${text}`);
      assert.equal(await attr(page, '#search-result tr[data-handle="net:search-1:eth0"]', 'data-pod'), 'shop/web-1', q);
      for (const part of ['shop/web-1', 'net:search-1:eth0', v4!, v6!, 'snode']) assert.ok(text.includes(part), `${q}: ${text} shows ${part}`);
    }
    await page.screenshot({ path: join(OUT, 'dashboard-search.png'), fullPage: true });
    assert.match(await find('shop/nobody'), /Nothing found: pod shop\/nobody holds no address/);
    assert.match(await find('10.255.255.254'), /Nothing found/);
    assert.deepEqual(pageErrors, []);
  } finally {
    await context?.close();
    await s.stop();
    d.remove();
  }
});

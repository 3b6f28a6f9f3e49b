/**
 * The dashboard in headless Chromium (Debian's chromium driven by playwright-core): start
 * `serve`, drive it with `podipam simulate`, check that the numbers on the page equal the
 * API's, click a block, watch a live update arrive without reload, release a leak from the
 * page, and save screenshots under test-output/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { openStore } from '../../src/store/index.js';
import { REPO_ROOT } from '../helpers/plugin.js';
import { requireExecutable } from '../helpers/prereq.js';
import { handleKey } from './serve-keys.js';
import { api, runCli, startServe } from './serve-harness.js';

const OUT = join(REPO_ROOT, 'test-output');
const CHROMIUM = '/usr/bin/chromium';

async function attr(page: Page, selector: string, name: string): Promise<string | null> {
  return page.locator(selector).first().getAttribute(name);
}

test('dashboard: numbers equal the API, blocks open, updates arrive live, a leak is released from the page', { timeout: 120_000 }, async () => {
  requireExecutable(CHROMIUM);
  mkdirSync(OUT, { recursive: true });
  const s = await startServe();
  let browser: Browser | undefined;
  try {
    // The dashboard URL serve printed carries the install token that writes need.
    const sim = await runCli(['simulate', '--server', s.dashboardUrl, '--nodes', '8', '--pods', '160', '--churn', '0.25', '--seed', '7', '--concurrency', '4', '--progress']);
    assert.equal(sim.code, 0, sim.stderr);
    assert.match(sim.stdout, /8 nodes joined, 200 pods added, 40 deleted, 0 failed/);
    assert.match(sim.stderr, /simulate \[#+\] 100% 248\/248/, 'the progress bar reached the end');

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
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

    // The IPv6 pool's map draws only its claimed blocks (2^66 slots).
    await page.locator('.pool[data-pool="default-ipv6"]').click();
    await page.waitForFunction(() => /default-ipv6/.test(document.getElementById('map-pool')?.textContent ?? ''));
    const map6 = (await api(s.url, 'GET', '/api/v1/pools/default-ipv6/blocks')).body;
    assert.equal(map6.slots, null);
    await page.waitForFunction((n) => document.querySelectorAll('#block-map .cell').length === n, map6.claimed);
    assert.equal(await page.locator('#block-map .cell.free').count(), 0);
    assert.deepEqual(pageErrors, []);
  } finally {
    await browser?.close();
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
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    const page = await browser.newPage();
    await page.goto(s.url + '/');
    await page.waitForSelector('#token-banner:not([hidden])');
    assert.equal(await page.textContent('#live-text'), 'token needed');
    await page.fill('#token-input', 'read-0123456789abcdef');
    await page.click('#token-form button');
    await page.waitForSelector('[data-stat="pools"][data-value="2"]');
    assert.ok(await page.isHidden('#token-banner'));
    assert.equal(await page.evaluate(() => localStorage.getItem('podipam.token')), 'read-0123456789abcdef');
  } finally {
    await browser?.close();
    await s.stop();
    d.remove();
  }
});

/**
 * Forecasts from podipam's own history, end to end: a real `serve` (history on), a small pool
 * filled at a steady rate through the API; then the API's forecast, `pool list -o wide`'s TREND
 * and FULL-IN, and the dashboard in headless Chromium drawing the pool's usage over time with
 * the forecast line rising towards the capacity, and the node headroom bars equal to the API's.
 * The screenshot of that view goes to test-output/dashboard-forecast.png (gitignored), so a run
 * leaves the tree clean; `npm run docs:screenshots` copies it over docs/img/dashboard-forecast.png.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser } from 'playwright-core';
import { REPO_ROOT } from '../helpers/plugin.js';
import { requireExecutable } from '../helpers/prereq.js';
import { api, runCli, startServe, waitFor } from './serve-harness.js';

const CHROMIUM = '/usr/bin/chromium';
const OUT = join(REPO_ROOT, 'test-output');
const PODS = 48;
const EVERY_MS = 125;

test('forecast: a pool filled at a steady rate is forecast full in the API, pool list -o wide and the dashboard chart', { timeout: 120_000 }, async () => {
  requireExecutable(CHROMIUM);
  const s = await startServe();
  let browser: Browser | undefined;
  try {
    assert.equal((await api(s.url, 'POST', '/api/v1/pools', { name: 'small', cidr: '10.99.0.0/24', blockSize: 28 })).status, 201);
    assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name: 'n1' })).status, 201);
    for (let i = 0; i < PODS; i++) {
      const r = await api(s.url, 'POST', '/api/v1/allocations', { node: 'n1', containerId: `fill-${i}`, network: 'fill', pools: ['small'] });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      await sleep(EVERY_MS);
    }
    // The follower applies the datastore's changes in the background: wait until it saw them all.
    const f = await waitFor('the history to hold every pod', 15_000, async () => {
      const r = await api(s.url, 'GET', '/api/v1/pools/small/forecast');
      return r.status === 200 && r.body.series.at(-1)?.used === PODS ? r.body : undefined;
    });
    assert.equal(f.allocated, PODS);
    assert.equal(f.capacity, 208, '16 blocks of /28, 13 usable each');
    assert.equal(f.trend.state, 'filling');
    // One pod every ~125 ms (plus the API's own time): well over 10,000 an hour.
    assert.ok(f.trend.ratePerHour > 10_000 && f.trend.ratePerHour < 3_600_000 / EVERY_MS, String(f.trend.ratePerHour));
    assert.ok(Math.abs(f.trend.secondsToFull - (208 - PODS) / (f.trend.ratePerHour / 3600)) < 1e-6 * f.trend.secondsToFull);
    assert.equal(f.method.window, '6h');
    assert.match(
      f.method.text,
      /^least-squares slope of the addresses pods held \(allocation history\), \d+ samples over the last \d+s \(of 6h asked: history knows no more\); time to full = \(capacity - allocated\) \/ slope$/,
    );
    const quiet = (await api(s.url, 'GET', '/api/v1/pools/default-ipv4/forecast')).body;
    assert.equal(quiet.trend.state, 'not-filling');

    // pool list -o wide: the same numbers, from the history file serve keeps beside its datastore.
    const historyDb = join(s.dataDir, 'history.db');
    assert.ok(existsSync(historyDb), `serve's history at ${historyDb}`);
    const wide = await runCli(['--datastore', s.datastore, 'pool', 'list', '-o', 'wide', '--history-db', historyDb]);
    assert.equal(wide.code, 0, wide.stderr);
    assert.match(wide.stdout, /^NAME\s+CIDR\s+BLOCK\s+NODE-SELECTOR\s+STATE\s+BLOCKS\s+CAPACITY\s+USED\s+TREND\s+FULL-IN$/m);
    const row = /^small\s+10\.99\.0\.0\/24\s+\/28\s+all\(\)\s+enabled\s+16\s+208\s+48\s+\+(\d+(?:\.\d)?)\/h\s+(\S+)$/m.exec(wide.stdout);
    assert.ok(row, wide.stdout);
    assert.ok(Math.abs(Number(row[1]) - f.trend.ratePerHour) < 0.2 * f.trend.ratePerHour, `CLI ${row[1]}/h vs API ${f.trend.ratePerHour}/h`);
    assert.match(row[2] ?? '', /^(\d+m)?\d+s$/);
    assert.match(wide.stdout, /^default-ipv4\s.*\s0\/h\s+not filling$/m);
    assert.match(wide.stdout, /^TREND, FULL-IN: least-squares slope of the addresses pods held/m);

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
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(m.text());
    });
    await page.goto(s.dashboardUrl);
    const card = '.forecast-card[data-pool="small"]';
    await page.waitForSelector(`${card} line.forecast[data-state="filling"]`);
    // The usage line rises from empty to 48 over the window; the forecast line starts at now's
    // level and rises (SVG y grows downwards) towards the capacity line.
    const geo = await page.evaluate((sel) => {
      const c = document.querySelector(sel);
      const n = (e: Element | null | undefined, a: string): number => Number(e?.getAttribute(a));
      const line = c?.querySelector('line.forecast');
      const cap = c?.querySelector('line.capacity');
      const pts = (c?.querySelector('polyline.usage')?.getAttribute('points') ?? '')
        .trim()
        .split(/\s+/)
        .map((p) => p.split(',').map(Number) as [number, number]);
      const dot = c?.querySelector('circle.full-at');
      return {
        x1: n(line, 'x1'),
        y1: n(line, 'y1'),
        x2: n(line, 'x2'),
        y2: n(line, 'y2'),
        capY: n(cap, 'y1'),
        pts,
        dotY: dot ? n(dot, 'cy') : null,
        verdict: c?.querySelector('.verdict')?.textContent ?? '',
      };
    }, card);
    assert.ok(geo.pts.length >= 10, `usage points: ${geo.pts.length}`);
    const first = geo.pts[0] as [number, number];
    const last = geo.pts[geo.pts.length - 1] as [number, number];
    assert.ok(last[1] < first[1], `usage rises: ${JSON.stringify([first, last])}`);
    assert.ok(Math.abs(geo.x1 - last[0]) < 1 && Math.abs(geo.y1 - last[1]) < 1, `the forecast starts where the usage ends: ${JSON.stringify(geo)}`);
    assert.ok(geo.x2 > geo.x1 && geo.y2 < geo.y1, `the forecast rises: ${JSON.stringify(geo)}`);
    // Drawn ahead as far as the window reaches back: up to the capacity (a dot where it is full), or short of it.
    assert.ok(geo.dotY === null ? geo.y2 > geo.capY : Math.abs(geo.y2 - geo.capY) < 1, `the forecast stops at the capacity line: ${JSON.stringify(geo)}`);
    assert.match(geo.verdict, /^48 of 208 · \+[\d.]+\/h · full in /);
    assert.equal(await page.locator('.forecast-card[data-pool="default-ipv4"]').getAttribute('data-state'), 'not-filling');
    // The node view of headroom: each bar as the API reports it.
    const nodes = (await api(s.url, 'GET', '/api/v1/nodes')).body.items as { name: string; headroom: { family: number; headroom: number }[] }[];
    const n1 = nodes.find((n) => n.name === 'n1');
    assert.ok(n1 && n1.headroom.length > 0);
    await page.waitForSelector('.hbar[data-node="n1"]');
    for (const h of n1.headroom)
      assert.equal(await page.locator(`.hbar[data-node="n1"][data-family="${h.family}"]`).getAttribute('data-headroom'), String(h.headroom));
    mkdirSync(OUT, { recursive: true });
    await page
      .locator('#forecasts')
      .locator('xpath=ancestor::div[contains(@class, "two")]')
      .screenshot({ path: join(OUT, 'dashboard-forecast.png') });
    assert.deepEqual(pageErrors, []);
  } finally {
    await browser?.close();
    await s.stop();
  }
});

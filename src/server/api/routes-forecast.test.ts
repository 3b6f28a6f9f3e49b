/**
 * GET /api/v1/pools/NAME/forecast over real HTTP (router, auth, errors) on a real history file:
 * a pool filled one address a minute for the last hour is forecast full when its addresses left
 * run out at that rate; a bad window or pool is a 400 naming it; an unknown pool 404; no history 503.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { openHistoryDb } from '../../history/sqlite-history-db.js';
import type { HistoryDb } from '../../history/history-db.js';
import { makeTempDir } from '../../../test/helpers/tmp.js';
import { createHttpServer, type HandlerSpec } from '../http/http-server.js';
import { hostPolicy } from '../http/request-guard.js';
import { Router } from '../http/router.js';
import type { SummaryCache } from '../summary/cluster-summary.js';
import { addForecastRoutes } from './routes-forecast.js';

const READ = 'read-token-for-the-forecast-test-0123456789';
const MIN = 60_000;
const dir = makeTempDir('api-forecast');
const servers: Server[] = [];
after(async () => {
  for (const s of servers) await new Promise<void>((resolve) => s.close(() => resolve()));
  dir.remove();
});

const summary = { get: async () => ({ pools: [{ name: 'fill', capacity: 150n, allocated: 60 }] }) } as unknown as SummaryCache;

async function serve(history: HistoryDb | undefined): Promise<string> {
  const router = new Router<HandlerSpec>();
  addForecastRoutes(router, history ? { history, summary } : { summary });
  const server = createHttpServer({ router, tokens: { read: READ, admin: `${READ}-admin` }, hostPolicy: hostPolicy('127.0.0.1') });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function get(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${READ}` }, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.json() };
}

test('forecast API: a steady fill from the history, the method stated, errors naming the parameter', async () => {
  const db = openHistoryDb(join(dir.path, 'history.db'));
  const now = Date.now();
  let rev = 0;
  db.apply({
    ends: [],
    starts: [],
    gaps: [{ from: 0, until: now - 61 * MIN, cause: 'history began' }],
    position: { source: 'memory:', revision: ++rev, at: now - 61 * MIN },
  });
  for (let i = 0; i < 60; i++) {
    const at = now - 60 * MIN + i * MIN;
    db.apply({
      ends: [],
      starts: [{ address: `10.0.0.${i}`, handle: `h${i}`, pool: 'fill', from: { at } }],
      position: { source: 'memory:', revision: ++rev, at },
    });
  }
  const base = await serve(db);
  try {
    const r = await get(`${base}/api/v1/pools/fill/forecast?window=2h`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.pool, 'fill');
    assert.equal(r.body.capacity, 150);
    assert.equal(r.body.trend.state, 'filling');
    assert.ok(Math.abs(r.body.trend.ratePerHour - 60) < 3, String(r.body.trend.ratePerHour));
    assert.ok(Math.abs(r.body.trend.secondsToFull - 90 * 60) < 0.1 * 90 * 60, String(r.body.trend.secondsToFull)); // 90 left at one a minute
    assert.equal(r.body.method.window, '2h');
    assert.equal(r.body.method.fit, 'least-squares');
    assert.match(r.body.method.text, /of 2h asked: history knows no more/);
    assert.equal(r.body.series.length, r.body.method.samples);
    assert.equal(r.body.series.at(-1).used, 60);

    const bad = await get(`${base}/api/v1/pools/fill/forecast?window=6x`);
    assert.equal(bad.status, 400);
    assert.deepEqual([bad.body.error.code, bad.body.error.field], ['invalid_field', 'window']);
    assert.match(bad.body.error.message, /window must be a duration .*: got "6x"/);
    assert.equal((await get(`${base}/api/v1/pools/fill/forecast?since=1h`)).body.error.field, 'since');
    assert.equal((await get(`${base}/api/v1/pools/Bad_Name/forecast`)).body.error.field, 'name');
    assert.equal((await get(`${base}/api/v1/pools/nope/forecast`)).status, 404);
    const off = await get(`${await serve(undefined)}/api/v1/pools/fill/forecast`);
    assert.deepEqual([off.status, off.body.error.code], [503, 'history_off']);
  } finally {
    db.close();
  }
});

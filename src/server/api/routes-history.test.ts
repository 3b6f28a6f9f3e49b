/**
 * GET /api/v1/history over real HTTP (the server's own plumbing: router, auth, errors) on a real
 * history file filled through apply() (test/helpers/history-fixture.ts): the read token, an
 * address's holders, `at` inside, between and in a gap, a pod, the export paged by `limit` with
 * nothing lost or repeated, JSON Lines, 400 naming the parameter, 503 without history.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { openHistoryDb } from '../../history/sqlite-history-db.js';
import type { HistoryDb } from '../../history/history-db.js';
import { DEFAULT_STORY as S, H, M, T0, fillHistory } from '../../../test/helpers/history-fixture.js';
import { makeTempDir, type TempDir } from '../../../test/helpers/tmp.js';
import { createHttpServer, type HandlerSpec } from '../http/http-server.js';
import { hostPolicy } from '../http/request-guard.js';
import { Router } from '../http/router.js';
import { addHistoryRoutes, exportPage } from './routes-history.js';

const READ = 'read-token-for-the-history-test-0123456789';
const ADMIN = 'admin-token-for-the-history-test-0123456789';
const iso = (t: number): string => new Date(t).toISOString();

let dir: TempDir;
let db: HistoryDb;
let base: string;
let offBase: string;
const servers: Server[] = [];

async function serve(history: HistoryDb | undefined): Promise<string> {
  const router = new Router<HandlerSpec>();
  addHistoryRoutes(router, history ? { history } : {});
  const server = createHttpServer({ router, tokens: { read: READ, admin: ADMIN }, hostPolicy: hostPolicy('127.0.0.1') });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

before(async () => {
  dir = makeTempDir('api-history');
  const file = join(dir.path, 'history.db');
  const w = openHistoryDb(file);
  fillHistory(w);
  w.close();
  db = openHistoryDb(file, { readonly: true });
  base = await serve(db);
  offBase = await serve(undefined);
});
after(async () => {
  for (const s of servers) await new Promise<void>((resolve) => s.close(() => resolve()));
  db?.close();
  dir?.remove();
});

/** GET with a bearer token ('' sends none). */
async function get(path: string, token = READ, at = base): Promise<{ status: number; body: any; text: string; headers: Headers }> {
  const res = await fetch(at + path, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').startsWith('application/json');
  return { status: res.status, body: json ? JSON.parse(text) : undefined, text, headers: res.headers };
}

const q = (v: string): string => encodeURIComponent(v);

test('history API: the read token is needed; an address: every holder and the gaps; at: holder, none, unknown', async () => {
  assert.equal((await get(`/api/v1/history?address=${S.a}`, '')).status, 401);
  assert.equal((await get(`/api/v1/history?address=${S.a}`, 'not-a-token')).status, 401);
  assert.equal((await get(`/api/v1/history?address=${S.a}`, ADMIN)).status, 200);
  const r = await get(`/api/v1/history?address=${S.a}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.address, S.a);
  assert.deepEqual(
    r.body.items.map((h: any) => [h.pod.name, h.from, h.until, h.why]),
    [
      ['web-1', { exact: true, at: iso(T0) }, { exact: true, at: iso(T0 + H) }, 'del'],
      ['web-2', { exact: true, at: iso(T0 + 2 * H) }, { exact: false, earliest: iso(T0 + 3 * H), at: iso(T0 + 4 * H) }, 'unknown'],
      ['web-3', { exact: false, earliest: iso(T0 + 3 * H), at: iso(T0 + 4 * H) }, null, null],
    ],
  );
  assert.deepEqual(r.body.gaps, [{ from: iso(T0 + 3 * H), until: iso(T0 + 4 * H), cause: 'etcd compacted revisions 31-39' }]);
  const win = await get(`/api/v1/history?address=${S.a}&since=${q(iso(T0 + 90 * M))}&until=${q(iso(T0 + 150 * M))}`);
  assert.deepEqual(
    win.body.items.map((h: any) => h.pod.name),
    ['web-2'],
  );

  const inside = await get(`/api/v1/history?address=${S.a}&at=${q('2026-03-01T10:30:00+00:00')}`);
  assert.equal(inside.body.known, true);
  assert.equal(inside.body.at, iso(T0 + 30 * M));
  assert.equal(inside.body.holder.pod.uid, 'u1');
  const between = await get(`/api/v1/history?address=${S.a}&at=${q(iso(T0 + 90 * M))}`);
  assert.deepEqual(between.body, { address: S.a, at: iso(T0 + 90 * M), known: true, holder: null });
  const uncertain = await get(`/api/v1/history?address=${S.a}&at=${q(iso(T0 + 3 * H + M))}`);
  assert.equal(uncertain.body.known, false, 'web-2 may or may not have held it still');
  assert.deepEqual([uncertain.body.gap.from, uncertain.body.gap.until], [iso(T0 + 3 * H), iso(T0 + 4 * H)]);
  const gap = await get(`/api/v1/history?address=${S.b}&at=${q(iso(T0 + 3 * H + M))}`);
  assert.deepEqual(gap.body, {
    address: S.b,
    at: iso(T0 + 3 * H + M),
    known: false,
    gap: { from: iso(T0 + 3 * H), until: iso(T0 + 4 * H), cause: 'etcd compacted revisions 31-39' },
  });
  // A relative time: now, web-3 holds it.
  assert.equal((await get(`/api/v1/history?address=${S.a}&at=-1s`)).body.holder.pod.name, 'web-3');
  const lines = await get(`/api/v1/history?address=${S.a}&format=jsonl`);
  assert.match(lines.headers.get('content-type') ?? '', /^application\/x-ndjson/);
  assert.deepEqual(
    lines.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).pod.name),
    ['web-1', 'web-2', 'web-3'],
  );
});

test('history API: a pod, every incarnation; the export paged by limit, in time order, nothing lost or repeated', async () => {
  const p = await get('/api/v1/history?pod=shop/web-1');
  assert.equal(p.status, 200, p.text);
  assert.equal(p.body.pod, 'shop/web-1');
  assert.deepEqual(
    p.body.items.map((h: any) => [h.address, h.pod.uid, h.why]),
    [
      [S.a, 'u1', 'del'],
      [S.b, 'u1b', 'cni-gc'],
    ],
  );

  const all = await get('/api/v1/history?since=' + q(iso(0)));
  assert.equal(all.status, 200, all.text);
  assert.equal(all.body.next, undefined);
  const n = all.body.items.length;
  assert.ok(n >= 9, `9 records at least: ${all.text}`);
  const paged: unknown[] = [];
  let since = iso(0);
  for (let i = 0; i < 20; i++) {
    const page = await get(`/api/v1/history?since=${q(since)}&limit=2`);
    assert.equal(page.status, 200, page.text);
    // At most 2, unless the page is one millisecond's records (all of them, never split).
    const times = new Set(page.body.items.map((r: any) => (r.event === 'gap' ? r.until : r.time.at)));
    assert.ok(page.body.items.length >= 1 && (page.body.items.length <= 2 || times.size === 1), page.text);
    paged.push(...page.body.items);
    if (page.body.next === undefined) break;
    since = page.body.next;
  }
  assert.deepEqual(paged, all.body.items, 'the pages together are the whole export');
  const jl = await get(`/api/v1/history?since=${q(iso(T0 + 5 * H))}&format=jsonl&limit=1`);
  assert.match(jl.headers.get('content-type') ?? '', /^application\/x-ndjson/);
  const rec = JSON.parse(jl.text.trimEnd());
  assert.deepEqual([rec.event, rec.address, rec.time], ['assigned', S.b, { exact: true, at: iso(T0 + 5 * H) }]);
  assert.equal(jl.headers.get('podipam-next-since'), iso(T0 + 6 * H));
  const bounded = await get(`/api/v1/history?since=${q(iso(T0 + 5 * H))}&until=${q(iso(T0 + 6 * H))}`);
  assert.deepEqual(
    bounded.body.items.map((r: any) => `${r.event}:${r.address}`),
    [`assigned:${S.b}`, `released:${S.b}`],
  );
});

test('exportPage never ends a page inside one millisecond', () => {
  const recs = [...db.records(0)];
  const time = (r: (typeof recs)[number]): number => (r.event === 'gap' ? r.until : r.at);
  // web-2's end, web-3's start and the gap's end share one time (T0+4h).
  const i = recs.findIndex((r) => time(r) === T0 + 4 * H);
  assert.ok(i >= 0 && time(recs[i + 1]!) === T0 + 4 * H, JSON.stringify(recs));
  const page = exportPage(db, 0, undefined, i + 1);
  assert.equal(page.records.length, i, 'the page stops before the shared millisecond');
  assert.equal(page.next, T0 + 4 * H);
  const one = exportPage(db, T0 + 4 * H, undefined, 1);
  assert.equal(one.records.length, 3, 'a page of one millisecond takes all of it');
  assert.equal(one.next, T0 + 4 * H + 1);
});

test('history API: bad input is 400 naming the parameter; without history 503', async () => {
  const cases: [string, string, RegExp][] = [
    [`address=${S.a}&at=yesterday`, 'at', /invalid at "yesterday": expected an RFC 3339 time/],
    [`address=${S.a}&since=2026-03-01T10:00:00`, 'since', /no offset/],
    [`address=${S.a}&until=soon`, 'until', /invalid until "soon"/],
    [`address=${S.a}&since=-1h&until=-2h`, 'since', /is after until/],
    [`address=${S.a}&at=now&since=-1h`, 'at', /one instant/],
    ['at=now', 'at', /give address too/],
    ['address=10.244.0.300', 'address', /invalid IP address "10\.244\.0\.300"/],
    ['pod=Shop/Web', 'pod', /want NAMESPACE\/NAME/],
    [`pod=shop/web-1&address=${S.a}`, 'pod', /not both/],
    ['since=-1h&limit=0', 'limit', /between 1 and 10000/],
    ['since=-1h&limit=10001', 'limit', /between 1 and 10000/],
    [`address=${S.a}&limit=5`, 'limit', /bounds the export/],
    ['since=-1h&format=xml', 'format', /json or jsonl/],
    [`addr=${S.a}`, 'addr', /unknown query parameter "addr"/],
  ];
  for (const [query, field, why] of cases) {
    const r = await get(`/api/v1/history?${query}`);
    assert.equal(r.status, 400, `${query}: ${r.text}`);
    assert.equal(r.body.error.field, field, query);
    assert.match(r.body.error.message, why, query);
  }
  const off = await get(`/api/v1/history?address=${S.a}`, READ, offBase);
  assert.equal(off.status, 503);
  assert.equal(off.body.error.code, 'history_off');
  assert.match(off.body.error.message, /^history is off/);
});

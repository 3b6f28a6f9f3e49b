import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Addr, formatAddr, parseAddr, parsePrefix } from '../ip/index.js';
import { type Pool, validatePoolSpec } from '../cluster/records/pool-record.js';
import { reuseAfterOfAddr } from '../cluster/records/pool-quarantine.js';
import { type WarmPoolConfig, WarmPool } from './warm-pool.js';

const cfg: WarmPoolConfig = { family: 4, minIdle: 0, maxIdle: 4, capacity: 8, cooldownMs: 1_000, stickyForMs: 5_000 };
const a = (s: string): Addr => parseAddr(s);
const T = 1_000_000;
const got = (r: ReturnType<WarmPool['acquire']>): string => (r.kind === 'hit' ? formatAddr(r.addr) : `miss@${r.retryAt}`);

/** A pool holding `idle` (refilled at 0), with `reuseAfterMs` for every address. */
function poolWith(idle: string[], reuseAfterMs: number): WarmPool {
  const p = new WarmPool(cfg);
  for (const _ of idle) assert.equal(p.acquire('seed', 0).kind, 'miss');
  p.refilled(idle.map(a), 0);
  p.setReuseAfter(() => reuseAfterMs);
  return p;
}

test('a released address goes to another pod only after max(cooldown, reuseAfter) since its release', () => {
  const p = poolWith(['10.0.0.2'], 10_000);
  assert.equal(got(p.acquire('pod-a', T)), '10.0.0.2');
  p.release('pod-a', T);
  assert.equal(got(p.acquire('pod-b', T + 1_000)), `miss@${T + 10_000}`, 'the cooldown alone (1 s) would hand it out here');
  p.refillFailed(1);
  assert.equal(got(p.acquire('pod-b', T + 9_999)), `miss@${T + 10_000}`);
  p.refillFailed(1);
  assert.equal(got(p.acquire('pod-b', T + 10_000)), '10.0.0.2');
  // Shorter than the cooldown: the cooldown decides.
  const q = poolWith(['10.0.0.3'], 200);
  q.acquire('pod-a', T);
  q.release('pod-a', T);
  assert.equal(got(q.acquire('pod-b', T + 999)), `miss@${T + 1_000}`);
});

test('a change of reuseAfter applies at once to addresses released before it, both ways', () => {
  const p = poolWith(['10.0.0.2', '10.0.0.3'], 0);
  p.acquire('pod-a', T);
  p.acquire('pod-b', T);
  p.release('pod-a', T); // 10.0.0.2, free at T+1s under the cooldown
  p.setReuseAfter(() => 60_000);
  assert.equal(got(p.acquire('pod-c', T + 30_000)), `miss@${T + 60_000}`);
  p.refillFailed(1);
  assert.deepEqual(
    p.withdraw(() => true, T + 30_000),
    [],
    'a quarantined address is not returned either',
  );
  assert.equal(p.plan(T + 30_000).returns.length, 0);
  p.setReuseAfter(() => 20_000);
  assert.equal(got(p.acquire('pod-c', T + 30_000)), '10.0.0.2');
  // Turned off: the cooldown alone.
  p.release('pod-b', T + 30_000);
  p.setReuseAfter(() => 60_000);
  p.setReuseAfter(undefined);
  assert.equal(got(p.acquire('pod-d', T + 31_000)), '10.0.0.3');
});

test('a sticky pod gets its own address back at once; after its window, another pod waits for the quarantine', () => {
  const p = poolWith(['10.0.0.2'], 20_000);
  p.acquire('ns/web-0', T, { sticky: true });
  p.release('ns/web-0', T);
  assert.equal(got(p.acquire('ns/web-0', T + 100)), '10.0.0.2', 'its own reservation');
  p.release('ns/web-0', T + 100);
  // The window ends at T+5.1s; the quarantine (from the last release) at T+20.1s.
  assert.equal(got(p.acquire('other', T + 6_000)), `miss@${T + 20_100}`);
  p.refillFailed(1);
  assert.equal(got(p.acquire('other', T + 20_100)), '10.0.0.2');
});

test('refilled addresses carry no release time; snapshot and restore keep the release time and the quarantine', () => {
  const p = poolWith(['10.0.0.2', '10.0.0.3'], 30_000);
  assert.equal(got(p.acquire('pod-a', T)), '10.0.0.2');
  p.release('pod-a', T);
  assert.equal(got(p.acquire('pod-b', T + 5_000)), '10.0.0.3', 'the refilled one is free at once');
  const snap = p.snapshot();
  assert.deepEqual(
    snap.idle.map((e) => [formatAddr(e.addr), e.freeAt, e.releasedAt]),
    [['10.0.0.2', T + 30_000, T]],
  );
  const r = WarmPool.restore(cfg, snap);
  r.setReuseAfter(() => 30_000);
  assert.equal(got(r.acquire('pod-c', T + 29_999)), `miss@${T + 30_000}`);
  r.refillFailed(1);
  assert.equal(got(r.acquire('pod-c', T + 30_000)), '10.0.0.2');
  assert.throws(
    () => WarmPool.restore(cfg, { idle: [{ addr: a('10.0.0.9'), freeAt: 0, releasedAt: Number.NaN }], inUse: [], reserved: [] }),
    /'idle\[0\]\.releasedAt' must be a finite number/,
  );
});

test('reuseAfterOfAddr: each address its pool’s setting (a shrinking pool’s former space included); undefined when no pool quarantines', () => {
  const pool = (name: string, cidr: string, reuseAfterMs: number, shrinkingFrom?: string): Pool => ({
    ...validatePoolSpec({ name, cidr, blockSize: 28 }),
    reuseAfterMs,
    ...(shrinkingFrom ? { shrinkingFrom: parsePrefix(shrinkingFrom) } : {}),
  });
  assert.equal(reuseAfterOfAddr([pool('a', '10.0.0.0/24', 0)]), undefined);
  const of = reuseAfterOfAddr([pool('a', '10.0.0.0/25', 5_000, '10.0.0.0/24'), pool('b', '10.1.0.0/24', 0)])!;
  assert.deepEqual([of(a('10.0.0.5')), of(a('10.0.0.200')), of(a('10.1.0.5')), of(a('192.168.0.1'))], [5_000, 5_000, 0, 0]);
});

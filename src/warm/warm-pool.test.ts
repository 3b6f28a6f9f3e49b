import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Addr, formatAddr, parseAddr } from '../ip/index.js';
import { type WarmPoolConfig, WarmPool, WarmPoolConfigError, validateWarmPoolConfig } from './warm-pool.js';

const cfg = (over: Partial<WarmPoolConfig> = {}): WarmPoolConfig => ({
  family: 4,
  minIdle: 0,
  maxIdle: 4,
  capacity: 8,
  cooldownMs: 30_000,
  stickyForMs: 600_000,
  ...over,
});
const a = (s: string): Addr => parseAddr(s);
const addrs = (...s: string[]): Addr[] => s.map(a);
const fmt = (xs: readonly Addr[]): string[] => xs.map(formatAddr);
const hit = (r: ReturnType<WarmPool['acquire']>): string => {
  if (r.kind !== 'hit') assert.fail(`expected a hit, got ${JSON.stringify(r)}`);
  return formatAddr(r.addr);
};
/** A pool holding `idle` (refilled at `at`). */
function poolWith(c: WarmPoolConfig, idle: string[], at = 0): WarmPool {
  const p = new WarmPool(c);
  const { refill } = p.plan(at);
  p.refillFailed(refill);
  for (const _ of idle) assert.equal(p.acquire('seed', at).kind, 'miss');
  p.refilled(idle.map(a), at);
  return p;
}

test('config: Terway checks, minIdle ≤ maxIdle ≤ capacity, non-negative integers, naming field and value', () => {
  const bad: [Partial<WarmPoolConfig>, string, unknown, RegExp][] = [
    [{ minIdle: 5 }, 'minIdle', 5, /'minIdle' must not exceed 'maxIdle' \(4\): current value is 5/],
    [{ maxIdle: 9 }, 'maxIdle', 9, /'maxIdle' must not exceed 'capacity' \(8\): current value is 9/],
    [{ capacity: -1 }, 'capacity', -1, /'capacity' must be a non-negative integer: current value is -1/],
    [{ minIdle: 1.5 }, 'minIdle', 1.5, /current value is 1\.5/],
    [{ cooldownMs: Number.NaN }, 'cooldownMs', Number.NaN, /'cooldownMs' must be a non-negative integer: current value is NaN/],
    [{ stickyForMs: '10m' as unknown as number }, 'stickyForMs', '10m', /current value is "10m"/],
    [{ family: 5 as unknown as 4 }, 'family', 5, /'family' must be 4 or 6: current value is 5/],
  ];
  for (const [over, field, value, msg] of bad) {
    assert.throws(
      () => new WarmPool(cfg(over)),
      (e: unknown) => e instanceof WarmPoolConfigError && e instanceof RangeError && e.field === field && Object.is(e.value, value) && msg.test(e.message),
      field,
    );
  }
  // The bounds themselves are allowed, zero everywhere too.
  assert.doesNotThrow(() => new WarmPool(cfg({ minIdle: 8, maxIdle: 8, capacity: 8 })));
  assert.doesNotThrow(() => new WarmPool(cfg({ minIdle: 0, maxIdle: 0, capacity: 0, cooldownMs: 0, stickyForMs: 0 })));
  assert.ok(Object.isFrozen(validateWarmPoolConfig(cfg())));
});

test('plan preloads to minIdle once: pending refills count, tokens bound it', () => {
  const p = new WarmPool(cfg({ minIdle: 3, maxIdle: 4, capacity: 8 }));
  assert.deepEqual(p.plan(0), { refill: 3, returns: [] });
  assert.deepEqual(p.plan(0), { refill: 0, returns: [] }, 'the three in flight are not asked for again');
  assert.deepEqual(p.counts(), { idle: 0, inUse: 0, reserved: 0, returning: 0, pending: 3, tokens: 5 });
  p.refilled(addrs('10.0.0.1', '10.0.0.2'), 5);
  p.refillFailed(1);
  assert.deepEqual(p.plan(5), { refill: 1, returns: [] }, 'the failed one is asked for again');
  // Tokens bound the refill: capacity 3 with 2 in use leaves one.
  const q = new WarmPool(cfg({ minIdle: 3, maxIdle: 3, capacity: 3 }));
  q.plan(0);
  q.refilled(addrs('10.0.0.1', '10.0.0.2', '10.0.0.3'), 0);
  hit(q.acquire('p1', 0));
  hit(q.acquire('p2', 0));
  assert.deepEqual(q.plan(0), { refill: 0, returns: [] });
  hit(q.acquire('p3', 0));
  assert.equal(q.counts().tokens, 0);
  assert.deepEqual(q.plan(0), { refill: 0, returns: [] }, 'at capacity nothing is refilled');
  q.release('p1', 0);
  assert.deepEqual(q.plan(0), { refill: 0, returns: [] }, 'idle 1 + in use 2 = capacity');
});

test('acquire hands out the oldest release first and none before its cooldown', () => {
  const p = poolWith(cfg({ cooldownMs: 100 }), ['10.0.0.9', '10.0.0.8']);
  // Refilled together: lower address first on a tie.
  assert.equal(hit(p.acquire('p1', 0)), '10.0.0.8');
  assert.equal(hit(p.acquire('p2', 0)), '10.0.0.9');
  p.release('p2', 10); // free at 110
  p.release('p1', 20); // free at 120
  const miss = p.acquire('p3', 109);
  assert.deepEqual(miss, { kind: 'miss', refill: true, retryAt: 110 });
  p.refillFailed(1);
  assert.equal(hit(p.acquire('p3', 110)), '10.0.0.9', 'released first, free exactly at release + cooldown');
  assert.equal(p.acquire('p4', 119).kind, 'miss');
  p.refillFailed(1);
  assert.equal(hit(p.acquire('p4', 500)), '10.0.0.8');
  // A fresh refill is free at once and queues by its arrival time.
  p.release('p3', 500); // free at 600
  assert.equal(p.acquire('p5', 550).kind, 'miss');
  p.refilled([a('10.0.0.200')], 550);
  assert.equal(hit(p.acquire('p5', 550)), '10.0.0.200');
});

test('a miss takes one token for the caller to fill; at capacity it takes none', () => {
  const p = new WarmPool(cfg({ minIdle: 0, maxIdle: 1, capacity: 2 }));
  assert.deepEqual(p.acquire('p1', 0), { kind: 'miss', refill: true, retryAt: undefined });
  assert.deepEqual(p.acquire('p2', 0), { kind: 'miss', refill: true, retryAt: undefined });
  assert.deepEqual(p.acquire('p3', 0), { kind: 'miss', refill: false, retryAt: undefined }, 'two pending fill the capacity');
  p.adopt('p1', a('10.0.0.1'), 0);
  p.refilled([a('10.0.0.2')], 0);
  assert.equal(hit(p.acquire('p2', 0)), '10.0.0.2');
  assert.deepEqual(p.counts(), { idle: 0, inUse: 2, reserved: 0, returning: 0, pending: 0, tokens: 0 });
  assert.throws(() => p.adopt('p3', a('10.0.0.3'), 0), /no refill is pending/);
  assert.throws(() => p.refilled([a('10.0.0.3')], 0), /1 refilled addresses: 0 pending/);
  assert.throws(() => p.refillFailed(1), /'n' must be an integer from 0 to 0: current value is 1/);
  p.release('p1', 0);
  assert.deepEqual(p.acquire('p3', 0), { kind: 'miss', refill: false, retryAt: 30_000 }, 'full; the idle one cools until 30 s');
});

test('acquire by a key that holds an address returns it again; release of an unknown key is a no-op', () => {
  const p = poolWith(cfg(), ['10.0.0.1', '10.0.0.2']);
  assert.deepEqual(p.acquire('p1', 0), { kind: 'hit', addr: a('10.0.0.1'), from: 'idle' });
  assert.deepEqual(p.acquire('p1', 5), { kind: 'hit', addr: a('10.0.0.1'), from: 'again' });
  assert.equal(p.counts().inUse, 1);
  assert.equal(formatAddr(p.addressOf('p1')!), '10.0.0.1');
  assert.equal(p.release('nobody', 5), undefined);
  assert.equal(formatAddr(p.release('p1', 5)!), '10.0.0.1');
  assert.equal(p.release('p1', 6), undefined, 'a repeated DEL changes nothing');
  assert.deepEqual(p.counts(), { idle: 2, inUse: 0, reserved: 0, returning: 0, pending: 0, tokens: 6 });
});

test('sticky: the same key gets its address back within the window, nobody else does; after it, it is idle', () => {
  const p = poolWith(cfg({ cooldownMs: 10, stickyForMs: 100 }), ['10.0.0.1', '10.0.0.2']);
  assert.equal(hit(p.acquire('ns/web-0', 0, { sticky: true })), '10.0.0.1');
  p.release('ns/web-0', 1000); // reserved during [1000, 1100)
  assert.equal(p.counts().reserved, 1);
  assert.equal(hit(p.acquire('ns/other', 1050)), '10.0.0.2', 'another pod gets another address');
  assert.equal(p.acquire('ns/third', 1099).kind, 'miss', 'and not the reserved one');
  p.refillFailed(1);
  assert.deepEqual(p.acquire('ns/web-0', 1099), { kind: 'hit', addr: a('10.0.0.1'), from: 'sticky' });
  // Sticky again, released, window passes: idle, the original key has no claim.
  p.acquire('ns/web-0', 1099); // again
  p.release('ns/web-0', 2000, { sticky: true });
  assert.equal(hit(p.acquire('ns/third', 2100)), '10.0.0.1', 'the window is half-open: at 2100 it is free');
  assert.equal(p.acquire('ns/web-0', 2100).kind, 'miss');
  // release(sticky: false) overrides the flag (GC knows the pod is gone).
  const q = poolWith(cfg({ cooldownMs: 10, stickyForMs: 100 }), ['10.0.0.1']);
  q.acquire('ns/db-0', 0, { sticky: true });
  q.release('ns/db-0', 0, { sticky: false });
  assert.equal(q.counts().reserved, 0);
  assert.equal(hit(q.acquire('x', 10)), '10.0.0.1');
  // stickyForMs 0 turns stickiness off.
  const r = poolWith(cfg({ stickyForMs: 0 }), ['10.0.0.1']);
  r.acquire('ns/db-0', 0, { sticky: true });
  r.release('ns/db-0', 0);
  assert.deepEqual(r.counts().reserved, 0);
});

test('sticky expiry rejoins the queue by its window end, after the cooldown when that is longer', () => {
  const p = poolWith(cfg({ cooldownMs: 500, stickyForMs: 100 }), ['10.0.0.1', '10.0.0.2']);
  p.acquire('s', 0, { sticky: true }); // .1
  p.acquire('t', 0); // .2
  p.release('s', 0); // reserved until 100, then free from 500
  p.release('t', 50); // free from 550
  assert.equal(p.acquire('u', 200).kind, 'miss', 'past the window but cooling');
  p.refillFailed(1);
  assert.deepEqual(
    p.snapshot().idle.map((e) => [formatAddr(e.addr), e.freeAt]),
    [
      ['10.0.0.1', 500],
      ['10.0.0.2', 550],
    ],
  );
  assert.equal(p.acquire('s', 499).kind, 'miss', 'its key lost it at 100');
  p.refillFailed(1);
  assert.equal(hit(p.acquire('u', 500)), '10.0.0.1');
  // A reservation whose window ends later than a plain release sits behind it.
  const q = poolWith(cfg({ cooldownMs: 10, stickyForMs: 100 }), ['10.0.0.1', '10.0.0.2']);
  q.acquire('s', 0, { sticky: true });
  q.acquire('t', 0);
  q.release('s', 0); // free for others from 100
  q.release('t', 50); // free from 60
  assert.equal(hit(q.acquire('u', 200)), '10.0.0.2');
  assert.equal(hit(q.acquire('v', 200)), '10.0.0.1');
});

test('plan returns the surplus above maxIdle, longest idle first, only past cooldown', () => {
  const p = poolWith(cfg({ minIdle: 1, maxIdle: 2, capacity: 8, cooldownMs: 100 }), ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5']);
  for (const k of ['a', 'b', 'c', 'd', 'e']) p.acquire(k, 0);
  p.release('c', 10); // free 110
  p.release('a', 20); // free 120
  p.release('e', 30); // free 130
  p.release('b', 40); // free 140
  assert.deepEqual(p.plan(50), { refill: 0, returns: [] }, 'all cooling: nothing returned yet');
  assert.deepEqual(fmt(p.plan(125).returns), ['10.0.0.3', '10.0.0.1'], 'two past cooldown, oldest first');
  assert.deepEqual(p.counts(), { idle: 2, inUse: 1, reserved: 0, returning: 2, pending: 0, tokens: 3 });
  assert.deepEqual(p.plan(1000), { refill: 0, returns: [] }, 'idle is at maxIdle; the returns in flight are not asked again');
  assert.equal(hit(p.acquire('f', 1000)), '10.0.0.5', 'a returning address is not handed out');
  p.returned([a('10.0.0.3')]);
  p.returnFailed([a('10.0.0.1')]);
  assert.deepEqual(p.counts(), { idle: 2, inUse: 2, reserved: 0, returning: 0, pending: 0, tokens: 4 });
  assert.equal(hit(p.acquire('g', 1000)), '10.0.0.1', 'a failed return is back in its old place, the head');
  assert.throws(() => p.returned([a('10.0.0.3')]), /10\.0\.0\.3: it is not being returned/);
  assert.throws(() => p.returnFailed([a('10.0.0.2')]), /not being returned/);
});

test('refilled and adopt refuse an address held already, twice in one batch, or of the other family', () => {
  const p = poolWith(cfg(), ['10.0.0.1']);
  p.acquire('x', 0);
  p.acquire('y', 0);
  p.acquire('z', 0);
  assert.equal(p.counts().pending, 2);
  assert.throws(() => p.refilled(addrs('10.0.0.2', '10.0.0.2'), 0), /Cannot take refilled 10\.0\.0\.2: the pool already holds it/);
  assert.throws(() => p.refilled(addrs('10.0.0.2', '10.0.0.1'), 0), /10\.0\.0\.1: the pool already holds it/);
  assert.throws(() => p.refilled([a('fd00::1')], 0), /fd00::1: the pool holds IPv4 addresses/);
  assert.throws(() => p.adopt('y', a('10.0.0.1'), 0), /Cannot adopt 10\.0\.0\.1: the pool already holds it/);
  assert.throws(() => p.adopt('x', a('10.0.0.7'), 0), /x: the key already holds 10\.0\.0\.1/);
  assert.equal(p.counts().pending, 2, 'nothing changed');
  assert.equal(p.counts().idle, 0);
  assert.throws(() => p.acquire('y', Number.NaN), /'now' must be a finite number: current value is NaN/);
});

test('cancel puts an address back where it was, so a dual-stack pair is both or neither', () => {
  const v4 = poolWith(cfg({ cooldownMs: 100 }), ['10.0.0.1', '10.0.0.2']);
  const v6 = new WarmPool(cfg({ family: 6, minIdle: 0, maxIdle: 1, capacity: 1 }));
  v6.acquire('holder', 0);
  v6.adopt('holder', a('fd00::1'), 0); // v6 full
  const got4 = v4.acquire('pod', 10);
  assert.equal(hit(got4), '10.0.0.1');
  assert.deepEqual(v6.acquire('pod', 10), { kind: 'miss', refill: false, retryAt: undefined });
  assert.equal(formatAddr(v4.cancel('pod', 10)!), '10.0.0.1');
  assert.equal(v4.cancel('pod', 10), undefined);
  assert.deepEqual(
    v4.snapshot().idle,
    [
      { addr: a('10.0.0.1'), freeAt: 0 },
      { addr: a('10.0.0.2'), freeAt: 0 },
    ],
    'same place, no cooldown',
  );
  // From a reservation: back into it, same window.
  v4.acquire('ns/s-0', 10, { sticky: true });
  v4.release('ns/s-0', 20); // until 600_020
  v4.acquire('ns/s-0', 30);
  v4.cancel('ns/s-0', 40);
  assert.deepEqual(v4.snapshot().reserved, [{ key: 'ns/s-0', addr: a('10.0.0.1'), expiresAt: 600_020, freeAt: 600_020, releasedAt: 20 }]);
  // Adopted: no place to go back to, so released (with the cooldown).
  v6.cancel('holder', 50);
  assert.deepEqual(v6.snapshot().idle, [{ addr: a('fd00::1'), freeAt: 30_050, releasedAt: 50 }]);
});

test('snapshot and restore rebuild the same pool; returns in flight become idle, pending refills are dropped', () => {
  const c = cfg({ minIdle: 1, maxIdle: 1, capacity: 6, cooldownMs: 10, stickyForMs: 100 });
  const p = poolWith(c, ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']);
  p.acquire('ns/a', 0, { sticky: true });
  p.acquire('ns/b', 0);
  p.release('ns/a', 5);
  assert.deepEqual(fmt(p.plan(5).returns), ['10.0.0.3']);
  assert.equal(p.acquire('ns/c', 5).kind, 'hit');
  assert.equal(p.acquire('ns/d', 5).kind, 'miss');
  const s = p.snapshot();
  assert.deepEqual(s, {
    idle: [],
    inUse: [
      { key: 'ns/b', addr: a('10.0.0.2'), sticky: false },
      { key: 'ns/c', addr: a('10.0.0.4'), sticky: false },
    ],
    reserved: [{ key: 'ns/a', addr: a('10.0.0.1'), expiresAt: 105, freeAt: 105, releasedAt: 5 }],
    returning: [{ addr: a('10.0.0.3'), freeAt: 0 }],
    pending: 1,
  });
  const r = WarmPool.restore(
    c,
    JSON.parse(
      JSON.stringify(s, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)),
      (_k, v) => (typeof v === 'string' && /^\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v),
    ),
  );
  assert.deepEqual(r.snapshot(), { ...s, idle: s.returning, returning: [], pending: 0 });
  assert.deepEqual(r.acquire('ns/a', 50), { kind: 'hit', addr: a('10.0.0.1'), from: 'sticky' });
  assert.deepEqual(r.acquire('ns/e', 50), { kind: 'hit', addr: a('10.0.0.3'), from: 'idle' });
});

test('restore refuses an inconsistent snapshot, naming the entry', () => {
  const c = cfg();
  const e = { idle: [], inUse: [], reserved: [] };
  const bad: [object, RegExp][] = [
    [{ ...e, idle: [{ addr: a('fd00::1'), freeAt: 0 }] }, /'idle\[0\]\.addr' must be an IPv4 address: current value is fd00::1/],
    [
      { ...e, idle: [{ addr: a('10.0.0.1'), freeAt: 0 }], inUse: [{ key: 'k', addr: a('10.0.0.1'), sticky: false }] },
      /'inUse\[0\]\.addr' is held twice: current value is 10\.0\.0\.1/,
    ],
    [
      { ...e, inUse: [{ key: 'k', addr: a('10.0.0.1'), sticky: false }], reserved: [{ key: 'k', addr: a('10.0.0.2'), expiresAt: 1, freeAt: 1 }] },
      /'reserved\[0\]\.key' is held twice: current value is "k"/,
    ],
    [{ ...e, idle: [{ addr: a('10.0.0.1'), freeAt: Number.POSITIVE_INFINITY }] }, /'idle\[0\]\.freeAt' must be a finite number: current value is Infinity/],
    [{ ...e, inUse: [{ key: 'k', addr: a('10.0.0.1'), sticky: 'yes' }] }, /'inUse\[0\]\.sticky' must be a boolean: current value is "yes"/],
  ];
  for (const [s, msg] of bad) assert.throws(() => WarmPool.restore(c, s as never), msg);
});

test('a pool restored over capacity gets no tokens and returns idle addresses until it fits', () => {
  const idle = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'].map((s, i) => ({ addr: a(s), freeAt: i * 10 }));
  const inUse = [{ key: 'k', addr: a('10.0.0.9'), sticky: false }];
  const p = WarmPool.restore(cfg({ minIdle: 2, maxIdle: 3, capacity: 3 }), { idle, inUse, reserved: [] });
  assert.equal(p.counts().tokens, 0);
  assert.equal(p.acquire('m', 0).kind, 'hit');
  assert.deepEqual(p.acquire('n', 0), { kind: 'miss', refill: false, retryAt: 10 });
  assert.deepEqual(fmt(p.plan(25).returns), ['10.0.0.2', '10.0.0.3'], 'two over capacity, past cooldown only');
  assert.deepEqual(p.plan(100), { refill: 0, returns: [] });
});

test('withdraw moves the matching idle addresses past cooldown to returning; cooling, in use and reserved stay; none is handed out', () => {
  const inA = (x: Addr): boolean => formatAddr(x).startsWith('10.0.');
  const p = poolWith(cfg({ capacity: 8, maxIdle: 8 }), ['10.0.0.1', '10.1.0.1', '10.0.0.2', '10.1.0.2', '10.0.0.3']);
  assert.equal(hit(p.acquire('pod-a', 0)), '10.0.0.1');
  assert.equal(hit(p.acquire('pod-s', 0, { sticky: true })), '10.0.0.2');
  p.release('pod-s', 1); // reserved for its key
  p.release('pod-a', 1); // cooling until 30 001
  assert.deepEqual(fmt(p.withdraw(inA, 2)), ['10.0.0.3'], 'the free one; the cooling one stays');
  assert.deepEqual(p.counts(), { idle: 3, inUse: 0, reserved: 1, returning: 1, pending: 0, tokens: 3 });
  assert.deepEqual(p.withdraw(inA, 3), [], 'nothing twice');
  assert.deepEqual(fmt(p.withdraw(inA, 30_001)), ['10.0.0.1'], 'cooled down');
  // The surplus plan never lists a withdrawn address again, and acquires never see it.
  assert.deepEqual(p.plan(100_000).returns, []);
  assert.equal(hit(p.acquire('x', 100_000)), '10.1.0.1');
  assert.equal(hit(p.acquire('y', 100_000)), '10.1.0.2');
  assert.deepEqual(p.acquire('z', 100_000), { kind: 'miss', refill: true, retryAt: undefined });
  p.refillFailed(1);
  // The sticky key still gets its reservation back.
  assert.equal(hit(p.acquire('pod-s', 100_000, { sticky: true })), '10.0.0.2');
  p.release('pod-s', 100_001, { sticky: false });
  // A failed return puts them back idle; a later withdraw takes them (and the released one, cooled) again.
  p.returnFailed(addrs('10.0.0.1', '10.0.0.3'));
  assert.deepEqual(fmt(p.withdraw(inA, 100_002)), ['10.0.0.3', '10.0.0.1']);
  assert.deepEqual(fmt(p.withdraw(inA, 130_001)), ['10.0.0.2']);
  p.returned(addrs('10.0.0.1', '10.0.0.2', '10.0.0.3'));
  assert.deepEqual(p.counts(), { idle: 0, inUse: 2, reserved: 0, returning: 0, pending: 0, tokens: 6 });
});

test('withdraw takes a reservation whose window ended; snapshot and restore keep a withdrawn address returning, then idle', () => {
  const all = (): boolean => true;
  const p = poolWith(cfg({ stickyForMs: 1000, cooldownMs: 0 }), ['10.0.0.1', '10.0.0.2']);
  assert.equal(hit(p.acquire('s', 0, { sticky: true })), '10.0.0.1');
  p.release('s', 0);
  assert.deepEqual(fmt(p.withdraw(all, 10)), ['10.0.0.2'], 'the reservation is not idle yet');
  assert.deepEqual(fmt(p.withdraw(all, 1000)), ['10.0.0.1'], 'its window ended');
  const snap = p.snapshot();
  assert.deepEqual(fmt(snap.returning?.map((e) => e.addr) ?? []), ['10.0.0.2', '10.0.0.1']);
  const q = WarmPool.restore(cfg({ stickyForMs: 1000, cooldownMs: 0 }), snap);
  assert.equal(q.counts().idle, 2, 'a restart forgets returns in flight: idle, for the next withdraw');
  assert.equal(q.withdraw(all, 1001).length, 2);
});

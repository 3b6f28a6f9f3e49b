// Model-based property tests of WarmPool: random sequences of acquire / release / sticky
// release / cancel / time passing / plan with its refills, misses and returns completing or
// failing / restart (snapshot → restore), run against the pool and against Model (plain arrays,
// linear scans, a sort per question), with every answer and the whole state compared after each
// step, and the rules checked on the pool's state from facts the test keeps itself.
// Replay a failure: WARM_POOL_SEED=<seed> WARM_POOL_PATH=<path> node scripts/test.mjs warm-pool
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Addr, Family } from '../ip/index.js';
import { type AcquireResult, type WarmPoolConfig, type WarmPoolSnapshot, WarmPool } from './warm-pool.js';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';

// ---- the model -------------------------------------------------------------------------------

interface MIdle {
  readonly v: bigint;
  readonly freeAt: number;
}
interface MRes {
  readonly key: string;
  readonly v: bigint;
  readonly expiresAt: number;
  readonly freeAt: number;
}
interface MUse {
  readonly v: bigint;
  readonly sticky: boolean;
  readonly origin: MIdle | MRes | undefined;
}
type MAcquire = { kind: 'hit'; v: bigint; from: string } | { kind: 'miss'; refill: boolean; retryAt: number | undefined };
interface MSnapshot {
  idle: MIdle[];
  inUse: { key: string; v: bigint; sticky: boolean }[];
  reserved: MRes[];
  returning: MIdle[];
  pending: number;
}

const earlier = (a: MIdle, b: MIdle): boolean => a.freeAt < b.freeAt || (a.freeAt === b.freeAt && a.v < b.v);
const inOrder = (xs: readonly MIdle[]): MIdle[] => [...xs].sort((a, b) => (earlier(a, b) ? -1 : 1));
const byKey = <T extends { key: string }>(xs: Iterable<T>): T[] => [...xs].sort((a, b) => (a.key < b.key ? -1 : 1));

/** The pool's rules written the plainest way: unsorted arrays, a sort whenever order matters. */
class Model {
  idle: MIdle[] = [];
  inUse = new Map<string, MUse>();
  reserved = new Map<string, MRes>();
  returning: MIdle[] = [];
  pending = 0;
  constructor(readonly c: WarmPoolConfig) {}

  held(): number {
    return this.idle.length + this.inUse.size + this.reserved.size + this.returning.length + this.pending;
  }
  expire(now: number): void {
    for (const [k, r] of this.reserved) {
      if (r.expiresAt <= now) {
        this.reserved.delete(k);
        this.idle.push({ v: r.v, freeAt: r.freeAt });
      }
    }
  }
  #take(e: MIdle): void {
    this.idle.splice(this.idle.indexOf(e), 1);
  }
  acquire(key: string, now: number, sticky: boolean): MAcquire {
    this.expire(now);
    const u = this.inUse.get(key);
    if (u) return { kind: 'hit', v: u.v, from: 'again' };
    const r = this.reserved.get(key);
    if (r) {
      this.reserved.delete(key);
      this.inUse.set(key, { v: r.v, sticky, origin: r });
      return { kind: 'hit', v: r.v, from: 'sticky' };
    }
    const free = inOrder(this.idle.filter((e) => e.freeAt <= now));
    if (free[0]) {
      this.#take(free[0]);
      this.inUse.set(key, { v: free[0].v, sticky, origin: free[0] });
      return { kind: 'hit', v: free[0].v, from: 'idle' };
    }
    const refill = this.held() < this.c.capacity;
    if (refill) this.pending++;
    return { kind: 'miss', refill, retryAt: inOrder(this.idle)[0]?.freeAt };
  }
  release(key: string, now: number, sticky: boolean | undefined): bigint | undefined {
    this.expire(now);
    const u = this.inUse.get(key);
    if (!u) return undefined;
    this.inUse.delete(key);
    const { cooldownMs, stickyForMs } = this.c;
    if ((sticky ?? u.sticky) && stickyForMs > 0) {
      this.reserved.set(key, { key, v: u.v, expiresAt: now + stickyForMs, freeAt: now + Math.max(stickyForMs, cooldownMs) });
    } else {
      this.idle.push({ v: u.v, freeAt: now + cooldownMs });
    }
    return u.v;
  }
  cancel(key: string, now: number): bigint | undefined {
    this.expire(now);
    const u = this.inUse.get(key);
    if (!u) return undefined;
    if (!u.origin) return this.release(key, now, undefined);
    this.inUse.delete(key);
    if ('key' in u.origin) this.reserved.set(key, u.origin);
    else this.idle.push(u.origin);
    this.expire(now);
    return u.v;
  }
  adopt(key: string, v: bigint, now: number, sticky: boolean): void {
    this.expire(now);
    this.pending--;
    this.inUse.set(key, { v, sticky, origin: undefined });
  }
  plan(now: number): { refill: number; returns: bigint[] } {
    this.expire(now);
    const { minIdle, maxIdle, capacity } = this.c;
    const surplus = Math.max(this.idle.length - maxIdle, this.held() - this.returning.length - capacity, 0);
    const out = inOrder(this.idle.filter((e) => e.freeAt <= now)).slice(0, surplus);
    for (const e of out) this.#take(e);
    this.returning.push(...out);
    const refill = Math.max(0, Math.min(minIdle - this.idle.length - this.pending, capacity - this.held()));
    this.pending += refill;
    return { refill, returns: out.map((e) => e.v) };
  }
  withdraw(pred: (v: bigint) => boolean, now: number): bigint[] {
    this.expire(now);
    const out = inOrder(this.idle.filter((e) => e.freeAt <= now && pred(e.v)));
    for (const e of out) this.#take(e);
    this.returning.push(...out);
    return out.map((e) => e.v);
  }
  refilled(vs: bigint[], now: number): void {
    this.expire(now);
    this.pending -= vs.length;
    for (const v of vs) this.idle.push({ v, freeAt: now });
  }
  settle(vs: bigint[], ok: boolean): void {
    const back = this.returning.filter((e) => vs.includes(e.v));
    this.returning = this.returning.filter((e) => !vs.includes(e.v));
    if (!ok) this.idle.push(...back);
  }
  restart(): void {
    this.idle.push(...this.returning);
    this.returning = [];
    this.pending = 0;
    for (const [k, u] of this.inUse) this.inUse.set(k, { ...u, origin: undefined });
  }
  snapshot(): MSnapshot {
    return {
      idle: inOrder(this.idle),
      inUse: byKey([...this.inUse].map(([key, u]) => ({ key, v: u.v, sticky: u.sticky }))),
      reserved: byKey(this.reserved.values()),
      returning: inOrder(this.returning),
      pending: this.pending,
    };
  }
}

function asModel(s: WarmPoolSnapshot): MSnapshot {
  return {
    idle: s.idle.map((e) => ({ v: e.addr.value, freeAt: e.freeAt })),
    inUse: s.inUse.map((e) => ({ key: e.key, v: e.addr.value, sticky: e.sticky })),
    reserved: s.reserved.map((e) => ({ key: e.key, v: e.addr.value, expiresAt: e.expiresAt, freeAt: e.freeAt })),
    returning: (s.returning ?? []).map((e) => ({ v: e.addr.value, freeAt: e.freeAt })),
    pending: s.pending ?? 0,
  };
}
const asModelAcquire = (r: AcquireResult): MAcquire => (r.kind === 'hit' ? { kind: 'hit', v: r.addr.value, from: r.from } : { ...r });

// ---- operations ------------------------------------------------------------------------------

type Op =
  | { t: 'acquire'; pod: number; sticky: boolean }
  | { t: 'release'; pod: number; sticky: boolean | undefined }
  | { t: 'cancel'; pod: number }
  | { t: 'advance'; ms: number }
  | { t: 'plan' }
  | { t: 'refill'; which: number; mode: 'all' | 'some' | 'none'; pick: number }
  | { t: 'miss'; which: number; mode: 'adopt' | 'refilled' | 'fail'; pick: number; sticky: boolean }
  | { t: 'return'; which: number; ok: boolean }
  | { t: 'withdraw'; mod: number; rest: number }
  | { t: 'restart' };

const PODS = 4;
const UNIVERSE = 40;
const pod = fc.nat(PODS - 1);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant('acquire' as const), pod, sticky: fc.boolean() }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('release' as const), pod, sticky: fc.constantFrom(undefined, true, false) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('cancel' as const), pod }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('advance' as const),
      ms: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0, 5, 10, 20, 30, 50, 100, 200) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 60 }) }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('plan' as const) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('refill' as const),
      which: fc.nat(7),
      mode: fc.constantFrom('all' as const, 'some' as const, 'none' as const),
      pick: fc.nat(UNIVERSE),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('miss' as const),
      which: fc.nat(7),
      mode: fc.constantFrom('adopt' as const, 'refilled' as const, 'fail' as const),
      pick: fc.nat(UNIVERSE),
      sticky: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('return' as const), which: fc.nat(7), ok: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restart' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('withdraw' as const), mod: fc.integer({ min: 1, max: 4 }), rest: fc.nat(3) }) },
);
const configArb: fc.Arbitrary<WarmPoolConfig> = fc
  .integer({ min: 0, max: 12 })
  .chain((capacity) => fc.tuple(fc.constant(capacity), fc.integer({ min: 0, max: capacity })))
  .chain(([capacity, maxIdle]) =>
    fc.record({
      family: fc.constantFrom(4 as Family, 6 as Family),
      minIdle: fc.integer({ min: 0, max: maxIdle }),
      maxIdle: fc.constant(maxIdle),
      capacity: fc.constant(capacity),
      cooldownMs: fc.constantFrom(0, 10, 30, 100),
      stickyForMs: fc.constantFrom(0, 20, 50, 200),
    }),
  );

// ---- the world around the pool: a cluster allocator, pods, and what the test knows ----------

/** (freeAt, address) order, on the test's own free times. */
const before = (fa: number, a: bigint, fb: number, b: bigint): boolean => fa < fb || (fa === fb && a < b);

class World {
  now = 0;
  /** The last `now` the pool was given: reservations whose window ended by then must be gone. */
  seen = 0;
  pool: WarmPool;
  readonly model: Model;
  readonly base: bigint;
  /** The cluster allocator's free addresses, and what it gave this node and did not get back. */
  readonly free: bigint[] = [];
  readonly node = new Set<bigint>();
  readonly holder = new Map<bigint, string>();
  readonly flag = new Map<string, boolean>();
  /** The time from which anyone may have each idle, reserved or returning address. */
  readonly freeAt = new Map<bigint, number>();
  /** Sticky windows: key → its address, reserved until `until` (exclusive). */
  readonly windows = new Map<string, { v: bigint; until: number }>();
  /** Where a cancel must put each in-use address back; absent: adopted or restored. */
  readonly origin = new Map<string, { freeAt: number; window: { v: bigint; until: number } | undefined }>();
  refills: number[] = [];
  misses: string[] = [];
  returns: bigint[][] = [];

  constructor(readonly c: WarmPoolConfig) {
    this.pool = new WarmPool(c);
    this.model = new Model(c);
    this.base = c.family === 4 ? 0x0a000000n : 0xfd000000000000000000000000000000n;
    for (let i = 1n; i <= BigInt(UNIVERSE); i++) this.free.push(this.base + i);
  }

  addr(v: bigint): Addr {
    return { family: this.c.family, value: v };
  }
  #fromCluster(pick: number): bigint {
    return this.free.splice(pick % this.free.length, 1)[0]!;
  }
  #pending(): number {
    return this.refills.reduce((s, n) => s + n, 0) + this.misses.length;
  }
  #live(key: string): { v: bigint; until: number } | undefined {
    const w = this.windows.get(key);
    return w && this.now < w.until ? w : undefined;
  }

  run(op: Op): void {
    const key = 'pod' in op ? `ns/pod-${op.pod}` : '';
    switch (op.t) {
      case 'acquire': {
        const tokensBefore = this.c.capacity - this.node.size - this.#pending();
        const r = this.pool.acquire(key, this.now, { sticky: op.sticky });
        assert.deepEqual(asModelAcquire(r), this.model.acquire(key, this.now, op.sticky), 'acquire answers as the model');
        this.seen = this.now;
        const w = this.#live(key);
        if (r.kind === 'miss') {
          assert.equal(w, undefined, 'a key inside its sticky window gets its address back');
          for (const e of this.pool.snapshot().idle) assert.ok(this.freeAt.get(e.addr.value)! > this.now, 'a miss while an idle address is free');
          assert.equal(r.refill, tokensBefore > 0, 'a miss takes a token exactly when one is left');
          if (r.refill) this.misses.push(key);
          break;
        }
        const v = r.addr.value;
        if (r.from === 'again') {
          assert.equal(this.holder.get(v), key);
          break;
        }
        assert.equal(this.holder.get(v), undefined, 'an address handed to two pods');
        assert.ok(this.node.has(v), 'an address the node does not hold');
        if (w) assert.deepEqual([r.from, v], ['sticky', w.v], 'sticky return within the window');
        else assert.equal(r.from, 'idle', 'a sticky hit after the window');
        if (r.from === 'idle') {
          const fa = this.freeAt.get(v)!;
          assert.ok(fa <= this.now, `handed out at ${this.now} before its cooldown ends at ${fa}`);
          for (const [k, w2] of this.windows) assert.ok(w2.v !== v || this.now >= w2.until, `${k}'s reserved address handed to ${key}`);
          for (const e of this.pool.snapshot().idle) {
            const b = e.addr.value;
            assert.ok(!before(this.freeAt.get(b)!, b, fa, v), 'an address released earlier is still idle');
          }
        }
        this.origin.set(key, { freeAt: this.freeAt.get(v)!, window: r.from === 'sticky' ? w : undefined });
        this.windows.delete(key);
        this.holder.set(v, key);
        this.flag.set(key, op.sticky);
        break;
      }
      case 'release':
      case 'cancel': {
        const o = this.origin.get(key);
        const r = op.t === 'release' ? this.pool.release(key, this.now, { sticky: op.sticky }) : this.pool.cancel(key, this.now);
        const m = op.t === 'release' ? this.model.release(key, this.now, op.sticky) : this.model.cancel(key, this.now);
        assert.equal(r?.value, m, `${op.t} answers as the model`);
        this.seen = this.now;
        if (r === undefined) {
          assert.ok(![...this.holder.values()].includes(key), `${op.t} of a key that holds an address`);
          break;
        }
        assert.equal(this.holder.get(r.value), key);
        this.holder.delete(r.value);
        if (op.t === 'cancel' && o) {
          this.freeAt.set(r.value, o.freeAt);
          if (o.window) this.windows.set(key, o.window);
        } else {
          const { cooldownMs, stickyForMs } = this.c;
          if (((op.t === 'release' ? op.sticky : undefined) ?? this.flag.get(key)) && stickyForMs > 0) {
            this.windows.set(key, { v: r.value, until: this.now + stickyForMs });
            this.freeAt.set(r.value, this.now + Math.max(stickyForMs, cooldownMs));
          } else {
            this.freeAt.set(r.value, this.now + cooldownMs);
          }
        }
        this.flag.delete(key);
        this.origin.delete(key);
        break;
      }
      case 'advance':
        this.now += op.ms;
        break;
      case 'plan':
        this.#plan();
        break;
      case 'refill': {
        if (this.refills.length === 0) break;
        const n = this.refills.splice(op.which % this.refills.length, 1)[0]!;
        const k = Math.min(op.mode === 'all' ? n : op.mode === 'some' ? n >> 1 : 0, this.free.length);
        const got = Array.from({ length: k }, () => this.#fromCluster(op.pick));
        this.pool.refilled(
          got.map((v) => this.addr(v)),
          this.now,
        );
        this.model.refilled(got, this.now);
        this.pool.refillFailed(n - k);
        this.model.pending -= n - k;
        this.seen = this.now;
        for (const v of got) {
          this.node.add(v);
          this.freeAt.set(v, this.now);
        }
        break;
      }
      case 'miss': {
        if (this.misses.length === 0) break;
        const who = this.misses.splice(op.which % this.misses.length, 1)[0]!;
        let mode = this.free.length === 0 ? 'fail' : op.mode;
        // Adopt only for a key that holds nothing, as the I/O layer would after its own miss.
        if (mode === 'adopt' && ([...this.holder.values()].includes(who) || this.#live(who))) mode = 'refilled';
        if (mode === 'fail') {
          this.pool.refillFailed(1);
          this.model.pending--;
          break;
        }
        const v = this.#fromCluster(op.pick);
        this.node.add(v);
        this.seen = this.now;
        if (mode === 'adopt') {
          this.pool.adopt(who, this.addr(v), this.now, { sticky: op.sticky });
          this.model.adopt(who, v, this.now, op.sticky);
          this.windows.delete(who);
          this.holder.set(v, who);
          this.flag.set(who, op.sticky);
        } else {
          this.pool.refilled([this.addr(v)], this.now);
          this.model.refilled([v], this.now);
          this.freeAt.set(v, this.now);
        }
        break;
      }
      case 'return': {
        if (this.returns.length === 0) break;
        const vs = this.returns.splice(op.which % this.returns.length, 1)[0]!;
        if (op.ok) this.pool.returned(vs.map((v) => this.addr(v)));
        else this.pool.returnFailed(vs.map((v) => this.addr(v)));
        this.model.settle(vs, op.ok);
        if (op.ok) {
          for (const v of vs) {
            this.node.delete(v);
            this.freeAt.delete(v);
            this.free.push(v);
          }
          this.free.sort((a, b) => (a < b ? -1 : 1));
        }
        break;
      }
      case 'withdraw': {
        // An IP pool became unusable: its addresses are those ≡ rest (mod mod).
        const pred = (v: bigint): boolean => v % BigInt(op.mod) === BigInt(op.rest % op.mod);
        const got = this.pool.withdraw((a) => pred(a.value), this.now).map((a) => a.value);
        assert.deepEqual(got, this.model.withdraw(pred, this.now), 'withdraw answers as the model');
        this.seen = this.now;
        for (const v of got) assert.equal(this.holder.get(v), undefined, 'withdrew an address in use');
        for (const v of got) assert.ok(this.freeAt.get(v)! <= this.now, 'withdrew an address before its cooldown or sticky window ends');
        assert.ok(
          this.pool.snapshot().idle.every((e) => !pred(e.addr.value) || e.freeAt > this.now),
          'a matching free address left idle',
        );
        if (got.length > 0) this.returns.push(got);
        break;
      }
      case 'restart': {
        const s = this.pool.snapshot();
        this.pool = WarmPool.restore(this.c, s);
        this.model.restart();
        assert.deepEqual(this.pool.snapshot(), {
          ...s,
          idle: [...s.idle, ...(s.returning ?? [])].sort((a, b) => (before(a.freeAt, a.addr.value, b.freeAt, b.addr.value) ? -1 : 1)),
          returning: [],
          pending: 0,
        });
        this.refills = [];
        this.misses = [];
        this.returns = [];
        this.origin.clear();
        break;
      }
    }
    this.#check();
  }

  #plan(): void {
    const { minIdle, maxIdle } = this.c;
    const r = this.pool.plan(this.now);
    assert.deepEqual({ refill: r.refill, returns: r.returns.map((a) => a.value) }, this.model.plan(this.now), 'plan answers as the model');
    this.seen = this.now;
    const after = this.pool.counts();
    const idle = this.pool.snapshot().idle.map((e) => e.addr.value);
    const ret = r.returns.map((a) => a.value);
    for (const v of ret) {
      assert.equal(this.holder.get(v), undefined, 'returning an address in use');
      assert.ok(this.node.has(v));
      assert.ok(this.freeAt.get(v)! <= this.now, 'returning an address before its cooldown or sticky window ends');
      for (const u of idle) assert.ok(before(this.freeAt.get(v)!, v, this.freeAt.get(u)!, u), 'returned before a longer-idle address');
    }
    if (ret.length > 0) assert.ok(after.idle >= maxIdle, `returned below maxIdle ${maxIdle}: idle ${after.idle}`);
    if (after.idle > maxIdle) for (const u of idle) assert.ok(this.freeAt.get(u)! > this.now, 'surplus above maxIdle left though past cooldown');
    assert.ok(after.idle + after.pending >= minIdle || after.tokens === 0, 'below minIdle with tokens left');
    if (r.refill > 0) assert.ok(after.idle + after.pending <= minIdle, 'refilled beyond minIdle');
    if (r.refill > 0) this.refills.push(r.refill);
    if (ret.length > 0) this.returns.push(ret);
  }

  /** The state rules, after every step. */
  #check(): void {
    const s = this.pool.snapshot();
    const c = this.pool.counts();
    assert.deepEqual(asModel(s), this.model.snapshot(), 'state as the model');
    const all = [...s.idle, ...s.inUse, ...s.reserved, ...(s.returning ?? [])].map((e) => e.addr.value);
    assert.equal(new Set(all).size, all.length, 'an address in two states at once');
    assert.deepEqual(new Set(all), this.node, 'the pool holds exactly what the cluster gave it and has not taken back');
    assert.deepEqual(new Map(s.inUse.map((e) => [e.addr.value, e.key])), this.holder, 'in use as the pods hold');
    for (const e of [...s.idle, ...s.reserved, ...(s.returning ?? [])]) assert.equal(e.freeAt, this.freeAt.get(e.addr.value), 'free time');
    assert.deepEqual([c.idle, c.inUse, c.reserved, c.returning, c.pending], [s.idle.length, s.inUse.length, s.reserved.length, s.returning?.length, s.pending]);
    const held = c.idle + c.inUse + c.reserved + c.returning + c.pending;
    assert.ok(held <= this.c.capacity, `holds ${held} > capacity ${this.c.capacity}`);
    assert.equal(c.pending, this.#pending(), 'pending refills as asked for');
    assert.equal(c.tokens, this.c.capacity - this.node.size - this.#pending(), 'tokens');
    const open = [...this.windows].filter(([, w]) => w.until > this.seen);
    assert.deepEqual(
      s.reserved.map((e) => [e.key, e.addr.value]),
      byKey(open.map(([key, w]) => ({ key, v: w.v }))).map((e) => [e.key, e.v]),
      'reserved exactly for the keys inside their sticky windows',
    );
    for (const [k, w] of this.windows) if (w.until <= this.seen) this.windows.delete(k);
  }
}

// ---- the runs --------------------------------------------------------------------------------

const runs = propertyRuns('WARM_POOL');

test(`warm pool agrees with its model and keeps its rules over ${runs} random operation sequences`, (t) => {
  runProperty(
    t,
    { env: 'WARM_POOL', file: 'warm-pool', runs },
    fc.property(configArb, fc.array(opArb, { maxLength: 60, size: 'max' }), (c, ops) => {
      const w = new World(c);
      for (const op of ops) w.run(op);
    }),
  );
});

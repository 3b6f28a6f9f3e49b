// Model-based property test of the SQLite history store: random batches of hold starts and ends
// (exact or uncertain times, replays, ends with no start, several handles on one address) and
// gaps, applied to a store on a real file and to a plain list of holds; then, at random instants
// (every event's time and its neighbours among them), holderAt, holdsOfAddress, openHolds and the
// export must agree with the model.
//
// The model answers holderAt from each hold's own state at the instant — started surely / maybe,
// ended surely / maybe — rather than from intervals as the store does:
//   in    = surely started and not maybe ended;  out = not maybe started or surely ended;  else maybe.
// Replay a failure: HISTORY_DB_SEED=<seed> HISTORY_DB_PATH=<path> node scripts/test.mjs sqlite-history-db.property
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import type { HistoryGap, HistoryTime, Hold } from '../model/history.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';
import type { HistoryBatch, HoldEnd, HoldStart } from './history-db.js';
import { openHistoryDb } from './sqlite-history-db.js';

const ADDRS = ['10.0.0.1', '10.0.0.2', 'fd00::1'];
const HANDLES = ['h0', 'h1', 'h2'];

type Op =
  | { kind: 'start'; a: number; h: number; dt: number; d: number }
  | { kind: 'end'; a: number; h: number; dt: number; d: number }
  | { kind: 'gap'; dt: number; len: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('start' as const),
      a: fc.nat(2),
      h: fc.nat(2),
      dt: fc.nat(3),
      d: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 6 })),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('end' as const),
      a: fc.nat(2),
      h: fc.nat(2),
      dt: fc.nat(3),
      d: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 6 })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('gap' as const), dt: fc.nat(3), len: fc.integer({ min: 1, max: 8 }) }) },
);
/** Batches of ops (a batch's ends are applied before its starts, as the contract says). */
const scenarioArb = fc.record({
  batches: fc.array(fc.array(opArb, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 12 }),
  probes: fc.array(fc.integer({ min: -2, max: 120 }), { maxLength: 20 }),
});

interface ModelHold {
  address: string;
  handle: string;
  from: HistoryTime;
  until?: HistoryTime & { why: 'del' };
}

class Model {
  readonly holds: ModelHold[] = [];
  readonly gaps: HistoryGap[] = [];
  apply(b: HistoryBatch): void {
    for (const e of b.ends) {
      const open = this.holds.find((h) => h.address === e.address && h.handle === e.handle && h.until === undefined);
      if (open) {
        open.until = { ...e.until, why: 'del' };
        continue;
      }
      if (this.holds.some((h) => h.address === e.address && h.handle === e.handle && h.until?.at === e.until.at)) continue;
      const lowest = Math.min(e.until.at, e.until.earliest ?? e.until.at);
      const oldest = this.gaps.length === 0 ? undefined : Math.min(...this.gaps.map((g) => g.from));
      const earliest = oldest !== undefined && oldest <= lowest ? oldest : Math.min(0, lowest);
      this.holds.push({ address: e.address, handle: e.handle, from: { at: e.until.at, earliest }, until: { ...e.until, why: 'del' } });
    }
    for (const s of b.starts) {
      if (this.holds.some((h) => h.address === s.address && h.handle === s.handle && h.until === undefined)) continue;
      this.holds.push({ address: s.address, handle: s.handle, from: s.from });
    }
    this.gaps.push(...(b.gaps ?? []));
  }
  /** 'in', 'out' or 'maybe' for hold `h` at `t`. */
  static state(h: ModelHold, t: number): 'in' | 'out' | 'maybe' {
    const surelyStarted = h.from.at <= t;
    const maybeStarted = h.from.earliest === undefined ? h.from.at <= t : h.from.earliest < t;
    const surelyEnded = h.until !== undefined && h.until.at <= t;
    const maybeEnded = h.until !== undefined && (h.until.earliest === undefined ? h.until.at <= t : h.until.earliest < t);
    if (surelyStarted && !maybeEnded) return 'in';
    if (!maybeStarted || surelyEnded) return 'out';
    return 'maybe';
  }
}

function scenarioBatches(batches: readonly (readonly Op[])[]): HistoryBatch[] {
  let t = 0;
  let rev = 0;
  const time = (d: number): HistoryTime => (d === 0 ? { at: t } : { at: t, earliest: t - d });
  return batches.map((ops) => {
    const ends: HoldEnd[] = [];
    const starts: HoldStart[] = [];
    const gaps: HistoryGap[] = [];
    for (const op of ops) {
      t += op.dt;
      if (op.kind === 'start') starts.push({ address: ADDRS[op.a]!, handle: HANDLES[op.h]!, from: time(op.d), pod: { namespace: 'ns', name: `p${op.h}` } });
      else if (op.kind === 'end') ends.push({ address: ADDRS[op.a]!, handle: HANDLES[op.h]!, until: time(op.d), why: 'del' });
      else {
        gaps.push({ from: t, until: t + op.len, cause: `gap ${gaps.length}` });
        t += op.len;
      }
    }
    return { ends, starts, gaps, position: { source: 'sqlite:///x', revision: ++rev, at: t } };
  });
}

const strip = (h: Hold | ModelHold): string => JSON.stringify([h.address, h.handle, h.from.at, h.from.earliest, h.until?.at, h.until?.earliest]);

test('the SQLite history store agrees with a model of holds and gaps', (t) => {
  // Many small files: in memory when the machine has /dev/shm.
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'podipam-history-prop-'));
  let n = 0;
  try {
    runProperty(
      t,
      { env: 'HISTORY_DB', file: 'sqlite-history-db.property', runs: propertyRuns('HISTORY_DB') / 10 },
      fc.property(scenarioArb, ({ batches, probes }) => {
        const file = join(dir, `h${n++}.db`);
        const db = openHistoryDb(file);
        try {
          const model = new Model();
          const applied = scenarioBatches(batches);
          for (const b of applied) {
            db.apply(b);
            model.apply(b);
          }
          const times = new Set<number>(probes);
          for (const h of model.holds)
            for (const x of [h.from.at, h.from.earliest, h.until?.at, h.until?.earliest]) if (x !== undefined) [x - 1, x, x + 1].forEach((y) => times.add(y));
          for (const g of model.gaps) [g.from, g.from + 1, g.until - 1, g.until].forEach((y) => times.add(y));
          for (const address of ADDRS) {
            const mine = model.holds.filter((h) => h.address === address);
            assert.deepEqual(db.holdsOfAddress(address).map(strip).sort(), mine.map(strip).sort(), `holds of ${address}`);
            for (const at of times) {
              const got = db.holderAt(address, at);
              const states = mine.map((h) => ({ h, s: Model.state(h, at) }));
              const inside = states.filter((x) => x.s === 'in');
              const where = `holderAt(${address}, ${at})`;
              if (inside.length > 0) {
                assert.ok(got.known && got.hold !== undefined, `${where}: want a hold, got ${JSON.stringify(got)}`);
                const latest = Math.max(...inside.map((x) => x.h.from.at));
                assert.ok(
                  inside.some((x) => x.h.from.at === latest && strip(x.h) === strip(got.hold!)),
                  `${where}: got ${strip(got.hold)}`,
                );
              } else if (states.some((x) => x.s === 'maybe') || model.gaps.some((g) => g.from < at && at < g.until)) {
                assert.ok(!got.known, `${where}: want unknown, got ${JSON.stringify(got)}`);
                assert.ok(got.gap.from < at && at < got.gap.until, `${where}: the gap given ${JSON.stringify(got.gap)} contains the instant`);
              } else {
                assert.deepEqual(got, { known: true, hold: undefined }, where);
              }
            }
            for (const since of [-1, 3, 10, 30]) {
              for (const until of [5, 20, 200]) {
                const want = mine.filter((h) => (h.from.earliest ?? h.from.at) <= until && (h.until === undefined || h.until.at > since));
                assert.deepEqual(
                  db.holdsOfAddress(address, { since, until }).map(strip).sort(),
                  want.map(strip).sort(),
                  `holds of ${address} in [${since}, ${until}]`,
                );
              }
            }
          }
          assert.deepEqual(
            db.openHolds().map(strip).sort(),
            model.holds
              .filter((h) => h.until === undefined)
              .map(strip)
              .sort(),
            'open holds',
          );
          const records = [...db.records(-Infinity)];
          assert.equal(records.length, model.holds.length * 2 - model.holds.filter((h) => h.until === undefined).length + model.gaps.length, 'records');
          const key = (r: (typeof records)[number]): number => (r.event === 'gap' ? r.until : r.at);
          for (let i = 1; i < records.length; i++) assert.ok(key(records[i - 1]!) <= key(records[i]!), 'records in time order');
          assert.deepEqual(db.position(), applied[applied.length - 1]!.position);
        } finally {
          db.close();
          for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
        }
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

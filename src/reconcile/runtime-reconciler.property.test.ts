/**
 * The reconcile loop against a scripted CRI double on a virtual clock: sandboxes start (their
 * ADD writes the allocation at once, takes up to MAX_CREATION, and only then is the sandbox
 * listed, as containerd's sandbox store does), stop normally (DEL releases), are removed while
 * their DEL failed (a true leak), or never existed (a planted allocation); the runtime answers
 * correctly, late, empty (a restart), or fails; some ADDs come from the plain plugin and are not
 * in the agent's in-flight set; a removed or never-created sandbox's id is created again while its
 * old allocation is still held (a repeated ADD that rewrites no record: only the agent's memory of
 * the call says the grace restarts). Invariant: no allocation of a sandbox that exists or is being
 * created is ever freed. And after the script, clean passes past the grace (the runtime listing
 * at least one sandbox: an empty list is never evidence) free every true leak.
 * Replay: RUNTIME_RECONCILE_SEED / RUNTIME_RECONCILE_PATH (printed on failure).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { silentLog } from '../log/logger.js';
import type { AllocationSource, SourcedAllocation } from './allocation-source.js';
import { RuntimeReconciler } from './runtime-reconciler.js';
import { propertyRuns } from '../../test/helpers/property.js';

const GRACE = 240_000;
const INTERVAL = 10_000;
/** The longest sandbox creation (ADD start → listed): below the grace, as the grace's derivation assumes. */
const MAX_CREATION = 200_000;

type Step =
  | { readonly kind: 'start'; readonly creation: number; readonly tracked: boolean; readonly recordTime: boolean }
  | { readonly kind: 'stop'; readonly pick: number; readonly delOk: boolean }
  | { readonly kind: 'plant'; readonly recordTime: boolean }
  | { readonly kind: 'readd'; readonly pick: number; readonly creation: number; readonly addMs: number }
  | { readonly kind: 'pass'; readonly answer: 'ok' | 'late' | 'empty' | 'fail'; readonly times: number }
  | { readonly kind: 'wait'; readonly ms: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('start' as const),
    creation: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: MAX_CREATION })),
    tracked: fc.boolean(),
    recordTime: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('stop' as const), pick: fc.nat(), delOk: fc.boolean() }),
  fc.record({ kind: fc.constant('plant' as const), recordTime: fc.boolean() }),
  fc.record({
    kind: fc.constant('readd' as const),
    pick: fc.nat(),
    creation: fc.integer({ min: 0, max: MAX_CREATION }),
    addMs: fc.integer({ min: 0, max: 2_000 }),
  }),
  fc.record({
    kind: fc.constant('pass' as const),
    answer: fc.constantFrom<('ok' | 'late' | 'empty' | 'fail')[]>('ok', 'ok', 'ok', 'late', 'empty', 'fail'),
    times: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.oneof(fc.integer({ min: 0, max: INTERVAL }), fc.integer({ min: 0, max: 3 * GRACE })) }),
);

interface Sandbox {
  readonly id: string;
  /** When the ADD ends and the runtime lists it. */
  readonly listedAt: number;
  readonly tracked: boolean;
  /** When its ADD returns, when that is before it is listed (its ADD then no longer in flight). */
  readonly addEndsAt?: number;
  removed: boolean;
}

class World {
  now = 1_000_000;
  seq = 0;
  readonly sandboxes = new Map<string, Sandbox>();
  /** Allocations held: container id → record time (undefined: the record has none). */
  readonly held = new Map<string, number | undefined>();
  readonly violations: string[] = [];
  /** When the agent last saw an ADD of each id begin (its tracked calls only). */
  readonly touched = new Map<string, number>();
  nextAnswer: 'ok' | 'late' | 'empty' | 'fail' = 'ok';

  listed(): string[] {
    return [...this.sandboxes.values()].filter((s) => !s.removed && s.listedAt <= this.now).map((s) => s.id);
  }

  /** Leaks: held, and no sandbox of that id exists or is being created. */
  leaks(): string[] {
    return [...this.held.keys()].filter((id) => this.sandboxes.get(id)?.removed !== false);
  }

  source(): AllocationSource {
    return {
      name: 'sim',
      list: async () =>
        [...this.held].map(([id, since]): SourcedAllocation => ({
          id: `sim|${id}`,
          source: 'sim',
          network: 'n',
          containerId: id,
          ifname: 'eth0',
          ...(since === undefined ? {} : { since }),
          addresses: [id],
        })),
      release: async (a) => {
        const s = this.sandboxes.get(a.containerId);
        if (s && !s.removed)
          this.violations.push(`freed ${a.containerId} at ${this.now}: its sandbox ${s.listedAt <= this.now ? 'is listed' : 'is being created'}`);
        if (!this.held.delete(a.containerId)) return [];
        return [a.containerId];
      },
    };
  }

  runtime() {
    return {
      listPodSandbox: async () => {
        const answer = this.nextAnswer;
        if (answer === 'fail') throw new Error('connection refused');
        if (answer === 'empty') return [];
        if (answer === 'late') this.now += 7_000; // the answer describes the runtime when it was processed, after the send
        return this.listed().map((id) => ({ id, name: id, namespace: 'ns', uid: id, state: 0, createdAt: '0' }));
      },
    };
  }

  inFlight(): Set<string> {
    return new Set([...this.sandboxes.values()].filter((s) => s.tracked && !s.removed && (s.addEndsAt ?? s.listedAt) > this.now).map((s) => s.id));
  }
}

test("runtime reconciliation against a scripted CRI double: never frees a listed or in-creation sandbox's address; frees every true leak past the grace", async (t) => {
  const runs = propertyRuns('RUNTIME_RECONCILE') / 10;
  const seed = process.env.RUNTIME_RECONCILE_SEED === undefined ? (Date.now() ^ (Math.random() * 2 ** 31)) | 0 : Number(process.env.RUNTIME_RECONCILE_SEED);
  const path = process.env.RUNTIME_RECONCILE_PATH;
  t.diagnostic(`fast-check seed ${seed}`);
  let freedLeaks = 0;
  const prop = fc.asyncProperty(fc.array(stepArb, { maxLength: 60, size: 'max' }), async (steps) => {
    const w = new World();
    const r = new RuntimeReconciler({
      endpoint: 'sim',
      runtime: w.runtime(),
      sources: () => [w.source()],
      inFlight: () => w.inFlight(),
      touchedAt: (id) => w.touched.get(id),
      graceMs: GRACE,
      intervalMs: INTERVAL,
      log: silentLog,
      now: () => w.now,
    });
    const pass = async (answer: 'ok' | 'late' | 'empty' | 'fail'): Promise<void> => {
      w.nextAnswer = answer;
      await r.pass().catch(() => undefined);
      w.now += INTERVAL;
    };
    for (const s of steps) {
      if (s.kind === 'start') {
        const id = `sb${w.seq++}`;
        w.sandboxes.set(id, { id, listedAt: w.now + s.creation, tracked: s.tracked, removed: false });
        w.held.set(id, s.recordTime ? w.now : undefined);
        if (s.tracked) w.touched.set(id, w.now);
      } else if (s.kind === 'readd') {
        // An id whose allocation is held though no sandbox has it: created again; the ADD finds
        // the allocation and returns it, rewriting nothing.
        const ids = w.leaks();
        const id = ids[s.pick % Math.max(1, ids.length)];
        if (id === undefined) continue;
        w.sandboxes.set(id, { id, listedAt: w.now + s.creation, tracked: true, addEndsAt: w.now + Math.min(s.addMs, s.creation), removed: false });
        w.touched.set(id, w.now);
      } else if (s.kind === 'stop') {
        const live = [...w.sandboxes.values()].filter((x) => !x.removed && x.listedAt <= w.now);
        const x = live[s.pick % Math.max(1, live.length)];
        if (!x) continue;
        if (s.delOk) w.held.delete(x.id);
        x.removed = true;
      } else if (s.kind === 'plant') {
        w.held.set(`never${w.seq++}`, s.recordTime ? w.now : undefined);
      } else if (s.kind === 'pass') for (let k = 0; k < s.times; k++) await pass(s.answer);
      else w.now += s.ms;
      if (w.violations.length > 0) return false;
    }
    // Clean passes well past the grace, the runtime listing one pod (an empty list is never
    // evidence): every true leak goes, nothing else.
    const leaks = new Set(w.leaks());
    w.sandboxes.set('keeper', { id: 'keeper', listedAt: w.now, tracked: true, removed: false });
    const until = w.now + GRACE + MAX_CREATION + 4 * INTERVAL;
    while (w.now < until) await pass('ok');
    assert.deepEqual(w.violations, []);
    const left = w.leaks();
    assert.deepEqual(left, [], `true leaks not freed after the grace: ${left.join(', ')}`);
    for (const id of leaks) assert.ok(!w.held.has(id));
    freedLeaks += leaks.size;
    return true;
  });
  const details = await fc.check(prop, { numRuns: runs, seed, ...(path === undefined ? {} : { path, endOnFailure: true }) });
  t.diagnostic(`${details.numRuns} scripts, ${freedLeaks} true leaks freed`);
  if (details.failed) {
    assert.fail(
      `${fc.defaultReportMessage(details)}\nReplay: RUNTIME_RECONCILE_SEED=${details.seed} RUNTIME_RECONCILE_PATH=${details.counterexamplePath} node scripts/test.mjs runtime-reconciler.property`,
    );
  }
  assert.ok(freedLeaks > 0, 'the scripts made no leak at all: the property proved nothing');
});

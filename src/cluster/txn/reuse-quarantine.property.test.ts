// Property test of the reuse quarantine through the allocator's own entry points on one store:
// two nodes (two ClusterIpam instances, each with its own cache and a clock off the true one by
// less than the quarantine's margin) assign, release by handle (on either node), release by
// address (a tool), keep a sticky pod's addresses and take them over, while time moves on. The
// invariants, from facts the test keeps itself in true time:
//   - no address is handed to a new holder before `reuseAfter` after its release (a takeover
//     of a sticky hold is not a hand-out: the hold kept the address);
//   - an exhaustion is explained: every usable address is held or was released within
//     reuseAfter + the margin + the clocks' difference.
// Replay a failure: REUSE_Q_SEED=<seed> REUSE_Q_PATH=<path> node scripts/test.mjs reuse-quarantine.property
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CLOCK_SKEW_MARGIN_MS } from '../../alloc/block-quarantine.js';
import { formatAddr } from '../../ip/index.js';
import { openStore } from '../../store/index.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { PoolExhaustedError } from '../records/errors.js';
import { stickyHoldHandle } from '../records/sticky-hold-id.js';

const REUSE_AFTER_MS = 10_000;
/** A /28 pool of /29 blocks: two blocks of 5 usable addresses (network, gateway, broadcast excluded). */
const CAPACITY = 10;
const NODES: readonly string[] = ['a', 'b'];
const T0 = Date.parse('2026-12-04T08:00:00.000Z');

type Step =
  | { kind: 'assign'; node: 0 | 1 }
  | { kind: 'release'; pick: number; node: 0 | 1 }
  | { kind: 'release-addr'; pick: number }
  | { kind: 'sticky-del'; pick: number }
  | { kind: 'takeover'; node: 0 | 1 }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('assign' as const), node: fc.constantFrom(0 as const, 1 as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat(), node: fc.constantFrom(0 as const, 1 as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release-addr' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sticky-del' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('takeover' as const), node: fc.constantFrom(0 as const, 1 as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 6000 }) }) },
);

async function run(steps: readonly Step[], skews: readonly [number, number]): Promise<void> {
  const store = await openStore('memory:');
  let t = T0;
  const ipams = NODES.map((n, i) => new ClusterIpam(store, { now: () => new Date(t + skews[i]!), writer: n }));
  await ipams[0]!.createPool({ name: 'p', cidr: '10.7.0.0/28', blockSize: 29, reuseAfter: `${REUSE_AFTER_MS}ms` });
  const held = new Map<string, { handle: string; node: number }>(); // address → holder
  const released = new Map<string, number>(); // address → true time of its last release
  const holds: { hold: string; addr: string }[] = [];
  let n = 0;
  const freed = (addrs: readonly string[]): void => {
    for (const a of addrs) {
      held.delete(a);
      released.set(a, t);
    }
  };
  for (const s of steps) {
    if (s.kind === 'wait') {
      t += s.ms;
    } else if (s.kind === 'assign') {
      const handle = `net:c${n++}:eth0`;
      try {
        const got = await ipams[s.node]!.assign({ node: NODES[s.node]!, handle, auto: { 4: 1 } });
        for (const g of got) {
          const a = formatAddr(g.addr);
          assert.ok(!held.has(a), `${a} handed to ${handle} while ${held.get(a)?.handle} holds it`);
          const r = released.get(a);
          assert.ok(
            r === undefined || t - r >= REUSE_AFTER_MS,
            `${a} handed to ${handle} on ${NODES[s.node]!} ${t - (r ?? 0)} ms after its release (reuseAfter ${REUSE_AFTER_MS} ms)`,
          );
          held.set(a, { handle, node: s.node });
        }
      } catch (e) {
        if (!(e instanceof PoolExhaustedError)) throw e;
        const window = REUSE_AFTER_MS + CLOCK_SKEW_MARGIN_MS + Math.abs(skews[0] - skews[1]);
        const young = [...released].filter(([a, r]) => !held.has(a) && t - r < window).length;
        assert.ok(held.size + young >= CAPACITY, `exhausted with ${held.size} held and ${young} quarantined of ${CAPACITY}: ${e.message}`);
        if (young > 0) assert.ok(e.quarantined !== undefined && e.quarantined.count > 0, `exhaustion with quarantined addresses does not say so: ${e.message}`);
      }
    } else if (s.kind === 'release' || s.kind === 'release-addr' || s.kind === 'sticky-del') {
      const all = [...held].filter(([, h]) => !h.handle.startsWith('sticky:'));
      if (all.length === 0) continue;
      const [addr, h] = all[s.pick % all.length]!;
      if (s.kind === 'release') freed((await ipams[s.node]!.releaseHandle(h.handle, NODES[s.node])).map((r) => formatAddr(r.addr)));
      else if (s.kind === 'release-addr')
        freed((await ipams[0]!.withReason('release').releaseAddresses([(await ipams[0]!.addressesOf(h.handle))![0]!.addr])).map((r) => formatAddr(r.addr)));
      else {
        const hold = stickyHoldHandle('net', { namespace: 'ns', name: `pod-${n++}` }, 'eth0')!;
        const stickyUntil = new Date(t + 3_600_000).toISOString();
        const r = await ipams[h.node]!.holdSticky(
          h.handle,
          hold,
          { node: NODES[h.node]!, network: 'net', ifname: 'eth0', namespace: 'ns', pod: hold, stickyUntil },
          NODES[h.node]!,
        );
        assert.deepEqual(r?.kept.map(formatAddr), [addr]);
        held.set(addr, { handle: hold, node: h.node });
        holds.push({ hold, addr });
      }
    } else {
      const h = holds.shift();
      if (!h) continue;
      const handle = `net:c${n++}:eth0`;
      const got = await ipams[s.node]!.assign({ node: NODES[s.node]!, handle, auto: { 4: 1 }, takeOver: h.hold });
      // The hold kept its address: taking it over is not a hand-out of a released address.
      assert.deepEqual(
        got.map((g) => formatAddr(g.addr)),
        [h.addr],
      );
      held.set(h.addr, { handle, node: s.node });
    }
  }
  await store.close();
}

test('reuse quarantine: no address goes to a new holder within reuseAfter of its release, on either node; exhaustion is explained', async (t) => {
  const seed = process.env.REUSE_Q_SEED === undefined ? (Date.now() ^ (Math.random() * 2 ** 31)) | 0 : Number(process.env.REUSE_Q_SEED);
  const path = process.env.REUSE_Q_PATH;
  t.diagnostic(`fast-check seed ${seed}`);
  const skew = fc.integer({ min: -(CLOCK_SKEW_MARGIN_MS / 2) + 1, max: CLOCK_SKEW_MARGIN_MS / 2 - 1 });
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 60 }), fc.tuple(skew, skew), (steps, skews) => run(steps, skews)),
    { numRuns: Number(process.env.REUSE_Q_RUNS ?? 150), seed, ...(path === undefined ? {} : { path, endOnFailure: true }) },
  );
});

/**
 * Operator actions interleaved with pod starts and stops, on a seeded random schedule, against one
 * real datastore, with answers lost after commit — and the one-holder invariant checked after
 * every step.
 *
 * Steps: ADD and DEL (the cluster allocator, as the plugin and the agent's cluster mode call it),
 * imports in the three formats (host-local: adopted through the allocator as `import host-local`
 * does; Whereabouts: its `kubectl get -o json` document through the parser; Calico: a plan as the
 * Calico parsers produce it), pool create, resize (grow, shrink), block-size change, node
 * selector, reuse quarantine (`reuseAfter`: set at create on some pools and changed live, so
 * releases stamp blocks and hand-outs, imports and GC-kept blocks skip quarantined addresses
 * while the rest goes on), drain and undrain, delete, reservations, `ipam release --ip`, and a datastore
 * restore from a backup taken earlier. Every txn's answer is lost after the commit with
 * probability `lose` (StoreUnavailableError: the caller cannot know it landed): the step is then
 * run again, as an operator or a runtime would, which re-reads — an unfinished shrink left by a
 * lost answer is what a later pool create meets.
 *
 * After every step: no two blocks overlap; every block lies in one pool's space with a size the
 * pool lists; no two pools' spaces overlap; every address a live pod was given is still held by
 * that pod's handle; `ipam check` reports exactly the inconsistencies the schedule planted (a pod's
 * handle record deleted behind the allocator: its addresses are leaks) until a step releases them. A violation throws with the seed and the steps.
 */
import assert from 'node:assert/strict';
import { addrOfOrdinal } from '../../src/alloc/block.js';
import { decodeBlock } from '../../src/cluster/records/block-record.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { BLOCK_PREFIX } from '../../src/cluster/records/keys.js';
import { type Pool, poolBlockSizes, poolSpace } from '../../src/cluster/records/pool-record.js';
import type { ImportPlan } from '../../src/import/import-plan.js';
import { applyImportPlan } from '../../src/import/apply-import-plan.js';
import { parseWhereabouts } from '../../src/import/whereabouts/parse-whereabouts.js';
import { formatAddr, formatPrefix, parseAddr, parsePrefix, prefixContainsPrefix, prefixOverlaps } from '../../src/ip/index.js';
import { cniHandleId } from '../../src/model/handle-id.js';
import { StoreUnavailableError, type Store } from '../../src/store/index.js';
import { backupText, restoreBackup } from '../../src/store/backup-store.js';
import { parseBackup } from '../../src/store/backup-file.js';
import { mulberry32 } from '../../src/util/mulberry32.js';
import { whereaboutsList } from '../helpers/whereabouts-fixture.js';

export interface ScheduleOptions {
  readonly seed: number;
  readonly steps: number;
  /** Probability that a txn's answer is lost after it committed. */
  readonly lose: number;
  /** Pods started and stopped by real processes (the plugin, an agent) besides the allocator's API. */
  readonly pods?: PodDriver;
}

/** A kind of pod the driver starts: 'plugin' (cluster mode, one process per call) or 'agent' (a warm agent through the shim). */
export type PodKind = 'plugin' | 'agent';

export interface PodDriver {
  readonly kinds: readonly PodKind[];
  /** ADD of container `id` (a node of the driver's choosing for `plugin`): its addresses, or the refusal as text. */
  add(kind: PodKind, id: string): Promise<{ readonly addrs: readonly string[] } | { readonly refused: string }>;
  del(kind: PodKind, id: string): Promise<void>;
  /** Whether block holder `handle` is right for pod `id`'s addresses (its own handle, or its node's warm handle). */
  holds(kind: PodKind, id: string, handle: string): boolean;
  /** Restarts the agent (its resource DB kept), when there is one. */
  restartAgent?(): Promise<void>;
  /** Resolves once every agent has published a holder view made after this call (so `ipam check` compares what it holds now). */
  settle?(): Promise<void>;
  /** Runs `f` with every agent stopped (as an operator stops every podipam process for a restore), then starts them again. */
  stopped?(f: () => Promise<void>): Promise<void>;
}

export interface ScheduleResult {
  readonly steps: readonly string[];
  readonly lost: number;
  readonly counts: Readonly<Record<string, number>>;
}

const NODES = ['on-a', 'on-b', 'on-c'];
/** The space the schedule's pools come from: /24s of 10.80.0.0/21, some /23s and /25s of them. */
const CIDRS = [
  '10.80.0.0/24',
  '10.80.1.0/24',
  '10.80.2.0/24',
  '10.80.3.0/24',
  '10.80.0.0/23',
  '10.80.2.0/23',
  '10.80.0.0/25',
  '10.80.0.128/25',
  '10.80.4.0/24',
  '10.80.4.0/23',
];

/** A store whose txn answers are lost after commit with probability `lose` (the commit stands). */
function lossy(store: Store, lose: number, rand: () => number, count: { lost: number }): Store {
  const txn: Store['txn'] = async (compares, ops) => {
    const r = await store.txn(compares, ops);
    if (rand() < lose) {
      count.lost++;
      throw new StoreUnavailableError(store.url, 'the answer was lost after the commit (test)');
    }
    return r;
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === 'txn') return txn;
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** Errors an operator or a runtime gets as answers (refusals): the step is done. */
const REFUSALS = new Set([
  'PoolConflictError',
  'PoolChangeRefusedError',
  'PoolInUseError',
  'PoolExhaustedError',
  'NoPoolError',
  'AddressUnavailableError',
  'NotFoundError',
  'RangeError',
  'TypeError',
  'PoolHasIpSetsError',
  'PlacementError',
  'ImportPoolGoneError',
]);

/** Runs `f` until it answers (a lost answer: again, as a runtime or an operator retries); a refusal is an answer. */
async function answered<T>(what: string, f: () => Promise<T>): Promise<T | Error> {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (e) {
      const err = e as Error;
      if (REFUSALS.has(err.name)) return err;
      if (err.name !== 'StoreUnavailableError' && err.name !== 'ContentionError') throw e;
      if (i >= 40) throw new Error(`${what}: no answer after ${i + 1} tries`, { cause: e });
    }
  }
}

export async function runOperatorSchedule(raw: Store, o: ScheduleOptions): Promise<ScheduleResult> {
  const rand = mulberry32(o.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const count = { lost: 0 };
  const store = lossy(raw, o.lose, mulberry32(o.seed ^ 0x5eed), count);
  const ipam = new ClusterIpam(store, { maxAttempts: 12 });
  const plain = new ClusterIpam(raw);
  const steps: string[] = [];
  const counts: Record<string, number> = {};
  /** Live pods: handle → the addresses their ADD (or import) gave them. */
  let live = new Map<string, Set<string>>();
  /** Planted inconsistencies: pods whose handle record was deleted behind the allocator (leaks check must report). */
  let planted = new Map<string, Set<string>>();
  let backup: { text: string; live: Map<string, Set<string>>; planted: Map<string, Set<string>>; driven: Set<string> } | undefined;
  const copy = (m: Map<string, Set<string>>) => new Map([...m].map(([h, as]) => [h, new Set(as)]));
  /** Pods the driver started: container id → kind and addresses. */
  const driven = new Map<string, { kind: PodKind; addrs: readonly string[] }>();
  let n = 0;

  const verify = async (after: string): Promise<void> => {
    const pools = await plain.listPools();
    const blocks = (await raw.list(BLOCK_PREFIX)).map(decodeBlock);
    const held = new Map<string, string>();
    const where = `seed ${o.seed}, after step ${steps.length} (${after}); steps:\n${steps.join('\n')}`;
    for (let i = 0; i < pools.length; i++) {
      for (let j = i + 1; j < pools.length; j++)
        assert.ok(!prefixOverlaps(poolSpace(pools[i]!), poolSpace(pools[j]!)), `pools ${pools[i]!.name} and ${pools[j]!.name} overlap: ${where}`);
    }
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i]!;
      for (let j = i + 1; j < blocks.length; j++)
        assert.ok(!prefixOverlaps(b.cidr, blocks[j]!.cidr), `blocks ${formatPrefix(b.cidr)} and ${formatPrefix(blocks[j]!.cidr)} overlap: ${where}`);
      const home = pools.find((p: Pool) => prefixContainsPrefix(poolSpace(p), b.cidr));
      assert.ok(home, `block ${formatPrefix(b.cidr)} lies in no pool's space: ${where}`);
      assert.ok(poolBlockSizes(home).includes(b.cidr.len), `block ${formatPrefix(b.cidr)} has a size pool ${home.name} does not list: ${where}`);
      for (const [ord, h] of b.allocations) held.set(formatAddr(addrOfOrdinal(b.cidr, ord)), h);
    }
    for (const [h, addrs] of live)
      for (const a of addrs) assert.equal(held.get(a), h, `live ${h}'s address ${a} is held by ${held.get(a) ?? 'nobody'}: ${where}`);
    for (const [id, p] of driven)
      for (const a of p.addrs)
        assert.ok(o.pods!.holds(p.kind, id, held.get(a) ?? ''), `${p.kind} pod ${id}'s address ${a} is held by ${held.get(a) ?? 'nobody'}: ${where}`);
    for (const [h, addrs] of planted)
      for (const a of addrs) assert.equal(held.get(a), h, `planted leak ${h}'s address ${a} is held by ${held.get(a) ?? 'nobody'}: ${where}`);
    // `ipam check` reports exactly the planted inconsistencies: those leaks, nothing else.
    const check = await plain.check();
    const expected = [...planted].flatMap(([h, as]) => [...as].map((a) => `${a} ${h}`)).sort();
    assert.deepEqual(
      { leaks: check.leaks.map((l) => `${l.ip} ${l.handle}`).sort(), problems: check.problems, holders: check.holders ?? [] },
      { leaks: expected, problems: [], holders: [] },
      `ipam check: ${where}`,
    );
  };

  const poolNames = async (): Promise<string[]> => (await plain.listPools()).map((p) => p.name);
  const openToAll = (p: Pool): boolean => p.nodeSelector.terms.length === 0 && !p.draining && !p.disabled && !p.deleting;
  /**
   * Pools that may be closed to the pod nodes (a selector they do not match, a drain, a delete):
   * those with another pool left open to every node — a schedule whose pools all refuse its nodes
   * would start no pod through the binaries at all. Read from the datastore, so a lost answer
   * cannot fool it.
   */
  const closable = async (): Promise<string[]> => {
    const pools = await plain.listPools();
    return pools.filter((p) => pools.some((q) => q !== p && openToAll(q))).map((p) => p.name);
  };
  const liveAddr = (): [string, string] | undefined => {
    const all = [...live].flatMap(([h, as]) => [...as].map((a): [string, string] => [h, a]));
    return all.length === 0 ? undefined : pick(all);
  };
  /** A random address of a random pool's CIDR (maybe held, maybe not). */
  const someAddr = async (): Promise<string | undefined> => {
    const pools = await plain.listPools();
    if (pools.length === 0) return undefined;
    const p = pick(pools);
    return formatAddr({ family: 4, value: p.cidr.base + BigInt(1 + Math.floor(rand() * (2 ** (32 - p.cidr.len) - 2))) });
  };
  /** After an import: the plan's handles that now hold their address are live. */
  const adoptFrom = async (plan: ImportPlan): Promise<void> => {
    for (const a of plan.addresses) {
      const h = await plain.holderOfAddress(parseAddr(a.ip));
      if (h?.handle === a.holder.handle) live.set(a.holder.handle, new Set([...(live.get(a.holder.handle) ?? []), a.ip]));
    }
  };

  const actions: [weight: number, name: string, run: () => Promise<string>][] = [
    [
      10,
      'add',
      async () => {
        const h = `net:c${n++}:eth0`;
        const r = await answered('add', () => ipam.assign({ node: pick(NODES), handle: h, auto: { 4: 1 }, attrs: { namespace: 'ns', pod: `p${n}` } }));
        if (r instanceof Error) return `add ${h}: ${r.name}`;
        live.set(h, new Set(r.map((x) => formatAddr(x.addr))));
        return `add ${h}: ${[...live.get(h)!].join(',')}`;
      },
    ],
    [
      6,
      'del',
      async () => {
        const h = pick([...live.keys(), ...driven.keys()]);
        if (!h) return 'del: no pod';
        const d = driven.get(h);
        if (d) {
          await o.pods!.del(d.kind, h);
          driven.delete(h);
          return `del ${d.kind} pod ${h}`;
        }
        await answered('del', () => ipam.releaseHandle(h));
        live.delete(h);
        return `del ${h}`;
      },
    ],
    [
      o.pods ? 14 : 0,
      'add-driven',
      async () => {
        const kind = pick(o.pods!.kinds);
        const id = `${kind}-${n++}`;
        const r = await o.pods!.add(kind, id);
        if ('refused' in r) return `add ${kind} pod ${id}: refused (${r.refused})`;
        driven.set(id, { kind, addrs: r.addrs });
        return `add ${kind} pod ${id}: ${r.addrs.join(',')}`;
      },
    ],
    [
      o.pods?.restartAgent ? 1 : 0,
      'agent-restart',
      async () => {
        await o.pods!.restartAgent!();
        return 'agent restarted';
      },
    ],
    [
      3,
      'import-host-local',
      async () => {
        const ip = await someAddr();
        if (!ip) return 'import host-local: no pool';
        const h = cniHandleId('hl-net', `hl${n++}`, 'eth0');
        const r = await answered('import host-local', () => ipam.assign({ node: pick(NODES), handle: h, ips: [parseAddr(ip)], adopt: true }));
        if (!(r instanceof Error)) live.set(h, new Set([ip]));
        return `import host-local ${ip} → ${r instanceof Error ? r.name : h}`;
      },
    ],
    [
      3,
      'import-whereabouts',
      async () => {
        const pools = await plain.listPools();
        if (pools.length === 0) return 'import whereabouts: no pool';
        const p = pick(pools);
        const ips = [
          ...new Set([await someAddr(), await someAddr()].filter((x): x is string => x !== undefined && prefixContainsPrefix(p.cidr, parsePrefix(`${x}/32`)))),
        ];
        const doc = whereaboutsList(
          [{ range: formatPrefix(p.cidr) }],
          ips.map((ip, i) => ({ containerId: `wb${n}-${i}`, podref: `ns/wb${n}-${i}`, ips: [ip] })),
        );
        n++;
        const plan = parseWhereabouts(doc, { network: 'wb-net', pools: [{ to: p.name }] });
        const r = await answered('import whereabouts', () => applyImportPlan(store, plan, { skipConflicts: true }));
        await adoptFrom(plan);
        return `import whereabouts ${ips.join(',')} into ${p.name}: ${r instanceof Error ? r.name : `${r.adopted} adopted, ${r.conflicts.length} conflicts`}`;
      },
    ],
    [
      3,
      'import-calico',
      async () => {
        const ip = await someAddr();
        const pools = await plain.listPools();
        const p = ip === undefined ? undefined : pools.find((x) => prefixContainsPrefix(x.cidr, parsePrefix(`${ip}/32`)));
        if (!ip || !p) return 'import calico: no pool';
        const cid = `cal${n++}`;
        const handle = cniHandleId('k8s-pod-network', cid, 'eth0');
        const plan: ImportPlan = {
          source: 'calico-kdd',
          pools: [],
          blocks: [],
          addresses: [
            {
              ip,
              pool: p.name,
              block: '',
              holder: {
                kind: 'pod',
                handle,
                node: pick(NODES),
                network: 'k8s-pod-network',
                containerId: cid,
                ifname: 'eth0',
                namespace: 'ns',
                pod: cid,
                sourceHandle: `k8s-pod-network.${cid}`,
              },
            },
          ],
          conflicts: [],
        };
        const r = await answered('import calico', () => applyImportPlan(store, plan, { skipConflicts: true }));
        await adoptFrom(plan);
        return `import calico ${ip} into ${p.name}: ${r instanceof Error ? r.name : `${r.adopted} adopted, ${r.conflicts.length} conflicts`}`;
      },
    ],
    [
      3,
      'pool-create',
      async () => {
        const cidr = pick(CIDRS);
        const name = `p${n++}`;
        const reuseAfter = pick(['0', '0', '1s', '30s']);
        const r = await answered('pool create', () => ipam.createPool({ name, cidr, blockSize: pick([26, 27, 28]), reuseAfter }));
        return `pool create ${name} ${cidr} --reuse-after ${reuseAfter}: ${r instanceof Error ? r.name : 'ok'}`;
      },
    ],
    [
      1,
      'pool-reuse-after',
      async () => {
        const names = await poolNames();
        if (names.length === 0) return 'pool reuse-after: no pool';
        const name = pick(names);
        const reuseAfter = pick(['0', '500ms', '30s']);
        const r = await answered('pool set', () => ipam.setPoolSettings(name, { reuseAfter }));
        return `pool set ${name} --reuse-after ${reuseAfter}: ${r instanceof Error ? r.name : 'ok'}`;
      },
    ],
    [
      3,
      'pool-resize',
      async () => {
        const names = await poolNames();
        if (names.length === 0) return 'pool resize: no pool';
        const name = pick(names);
        const cidr = pick(CIDRS);
        const r = await answered('pool resize', () => ipam.resizePool(name, cidr));
        return `pool resize ${name} ${cidr}: ${r instanceof Error ? r.name : r.kind}`;
      },
    ],
    [
      2,
      'pool-block-size',
      async () => {
        const names = await poolNames();
        if (names.length === 0) return 'pool set: no pool';
        const name = pick(names);
        const size = pick([25, 26, 27, 28, 29]);
        const r = await answered('pool set', () => ipam.setPoolSettings(name, { blockSize: size }));
        return `pool set ${name} --block-size ${size}: ${r instanceof Error ? r.name : 'ok'}`;
      },
    ],
    [
      1,
      'pool-selector',
      async () => {
        const sel = pick(['all()', 'zone=a', 'all()']);
        const names = sel === 'all()' ? await poolNames() : await closable();
        if (names.length === 0) return `pool selector ${sel}: no pool`;
        const name = pick(names);
        const r = await answered('pool set', () => ipam.setPoolSettings(name, { nodeSelector: sel }));
        return `pool set ${name} --node-selector ${sel}: ${r instanceof Error ? r.name : 'ok'}`;
      },
    ],
    [
      1,
      'pool-drain',
      async () => {
        const on = rand() < 0.5;
        const names = on ? await closable() : await poolNames();
        if (names.length === 0) return `pool ${on ? 'drain' : 'undrain'}: no pool`;
        const name = pick(names);
        const r = await answered('pool drain', () => ipam.setPoolDraining(name, on));
        return `pool ${on ? 'drain' : 'undrain'} ${name}: ${r instanceof Error ? r.name : 'ok'}`;
      },
    ],
    [
      2,
      'pool-delete',
      async () => {
        // The last pool open to every node stays (closable()).
        const names = await closable();
        if (names.length === 0) return 'pool delete: not the last open pool';
        const name = pick(names);
        const r = await answered('pool delete', () => ipam.deletePool(name));
        return `pool delete ${name}: ${r instanceof Error ? r.name : 'ok'}`;
      },
    ],
    [
      1,
      'reserve',
      async () => {
        const ip = await someAddr();
        if (!ip) return 'reserve: no pool';
        const r = await answered('reserve', () => ipam.putReservation(`r${n++}`, [`${ip}/32`]));
        return `reserve ${ip}: ${r instanceof Error ? r.name : 'ok'}`;
      },
    ],
    [
      2,
      'release-ip',
      async () => {
        const got = liveAddr();
        if (!got) return 'ipam release: no pod';
        const [h, a] = got;
        await answered('ipam release', () => ipam.releaseAddresses([parseAddr(a)]));
        live.get(h)!.delete(a);
        return `ipam release --ip ${a} (of ${h})`;
      },
    ],
    [
      1,
      'plant-leak',
      async () => {
        const h = pick([...live.keys()].filter((x) => (live.get(x)?.size ?? 0) > 0));
        if (!h) return 'plant leak: no pod';
        const e = await raw.get(`handles/${h}`);
        if (!e) return `plant leak: ${h} has no record`;
        // Behind the allocator's back (what a lost or buggy writer leaves): the holder record goes, the block keeps the addresses.
        assert.ok((await raw.txn([{ key: e.key, rev: e.rev }], [{ type: 'delete', key: e.key }])).succeeded);
        planted.set(h, live.get(h)!);
        live.delete(h);
        return `plant leak: handle record of ${h} deleted (${[...planted.get(h)!].join(',')})`;
      },
    ],
    [
      1,
      'release-leaks',
      async () => {
        const leaks = (await plain.check()).leaks;
        for (const l of leaks) await answered('release leak', () => ipam.releaseLeak(l));
        const n0 = planted.size;
        planted = new Map();
        return `release ${leaks.length} leaked address(es) of ${n0} planted pod(s)`;
      },
    ],
    [
      1,
      'backup',
      async () => {
        backup = { text: (await backupText(raw, new Date())).text, live: copy(live), planted: copy(planted), driven: new Set(driven.keys()) };
        return 'datastore backup';
      },
    ],
    [
      1,
      'restore',
      async () => {
        if (!backup) return 'datastore restore: no backup yet';
        const b = backup;
        const restore = async (): Promise<void> => void (await restoreBackup(raw, parseBackup('backup', b.text), { force: true }));
        await (o.pods?.stopped ? o.pods.stopped(restore) : restore());
        live = copy(backup.live);
        planted = copy(backup.planted);
        // What the README tells an operator: every podipam process stopped for the restore; then
        // pods started since the backup, unknown to the restored datastore, are recreated (their
        // DEL here; a new ADD is a later step).
        const since = [...driven].filter(([id]) => !backup!.driven.has(id));
        for (const [id, d] of since) {
          await o.pods!.del(d.kind, id);
          driven.delete(id);
        }
        // Until the agent's view is newer than those DELs, it still lists pods the restored datastore never heard of.
        await o.pods?.settle?.();
        return `datastore restore${since.length > 0 ? `; pods started since the backup deleted: ${since.map(([id]) => id).join(', ')}` : ''}`;
      },
    ],
  ];
  const total = actions.reduce((s, a) => s + a[0], 0);

  await plain.createPool({ name: 'base', cidr: '10.80.0.0/24', blockSize: 27, reuseAfter: '2s' });
  await verify('start');
  for (let i = 0; i < o.steps; i++) {
    let x = rand() * total;
    const a = actions.find(([w]) => (x -= w) < 0) ?? actions[0]!;
    counts[a[1]] = (counts[a[1]] ?? 0) + 1;
    let line: string;
    try {
      line = await a[2]();
    } catch (e) {
      throw new Error(`seed ${o.seed}, step ${i + 1} (${a[1]}) failed: ${(e as Error).message}; steps:\n${steps.join('\n')}`, { cause: e });
    }
    steps.push(`${i + 1}. ${line}`);
    await verify(line);
  }
  return { steps, lost: count.lost, counts };
}

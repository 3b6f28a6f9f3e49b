/**
 * `ipam check` with heartbeats, on a real SQLite datastore file and on a real etcd: two warm
 * agents (WarmService in-process, real resource DBs, clocks moved by hand) serve a pod each and
 * publish their views; then each pod's address is given to another handle in its block, as a
 * faulty writer would. Agent A stays up: at its refresh period its view is unchanged, so it
 * writes only its heartbeat (`agent-beats/na`, naming the view's revision) — the view is not
 * written again — and the check counts A's view as vouched after the change: a settled
 * `pod-held-elsewhere` finding. Agent B stopped answering: its view stands on its own revision
 * and time, and its disagreement is listed as unsettled (its view is old), never as a finding.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { startEtcd } from '../../test/helpers/etcd.js';
import { agentBeatKey, agentViewKey, BLOCK_PREFIX, decodeAgentBeat, decodeBlock, encodeBlock } from '../cluster/records/index.js';
import { ordinalOf } from '../alloc/block.js';
import { parseAddr, prefixContains } from '../ip/index.js';
import type { Store } from '../store/index.js';
import { VIEW_REFRESH_FACTOR } from './warm-view-publisher.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-beat-'));
after(() => rmSync(root, { recursive: true, force: true }));

const req = (id: string) => ({
  containerId: id,
  ifname: 'eth0',
  cniArgs: new Map([
    ['K8S_POD_NAMESPACE', 'ns'],
    ['K8S_POD_NAME', id],
  ]),
  conf: warmConf,
});

const options = (node: string) => ({
  node,
  minIdle: 2,
  maxIdle: 4,
  capacity: 16,
  cooldownMs: 30_000,
  stickyForMs: 0,
  tickMs: 3_600_000,
  writeDelayMs: 3_600_000,
  viewIntervalMs: 1000,
});

/** Gives `ip` in its block to handle `to` (nothing else changed), as a faulty writer would. */
async function giveAway(store: Store, ip: string, to: string): Promise<void> {
  const addr = parseAddr(ip);
  for (const e of await store.list(BLOCK_PREFIX)) {
    const b = decodeBlock(e);
    if (!prefixContains(b.cidr, addr)) continue;
    const allocations = new Map(b.allocations).set(ordinalOf(b.cidr, addr), to);
    const r = await store.txn([{ key: e.key, rev: e.rev }], [{ type: 'put', key: e.key, value: encodeBlock({ ...b, allocations }) }]);
    assert.ok(r.succeeded, 'planted');
    return;
  }
  assert.fail(`no block holds ${ip}`);
}

async function scenario(n: number, url: string | undefined): Promise<void> {
  const a: WarmRig = await startWarmRig({ root, n, url, pools: [{ name: 'v4', cidr: '10.81.0.0/16' }], options: options('na') });
  const b: WarmRig = await startWarmRig({ root, n: n + 1, url: a.url, pools: [], options: options('nb') });
  try {
    const store = a.admin.store;
    // Both agents' views were built two minutes ago (their clocks), stale by now on their own.
    const t0 = Date.now() - 120_000;
    a.clock.t = b.clock.t = t0;
    const ipA = (await a.warm.add(req('pa'))).ips[0]!.address.split('/')[0]!;
    const ipB = (await b.warm.add(req('pb'))).ips[0]!.address.split('/')[0]!;
    await a.warm.flushWrites();
    await b.warm.flushWrites();
    const viewA = (await store.get(agentViewKey('na')))!;
    assert.ok(viewA && (await store.get(agentViewKey('nb'))), 'both views published');

    await giveAway(store, ipA, 'k8s:other-a:eth0');
    await giveAway(store, ipB, 'k8s:other-b:eth0');

    const before = await a.admin.check();
    assert.equal(before.holders, undefined, 'no finding while neither agent has answered');
    assert.deepEqual((before.unsettled ?? []).map((u) => [u.node, u.address, u.kind, /s old/.test(u.reason)]).sort(), [
      ['na', ipA, 'pod-held-elsewhere', true],
      ['nb', ipB, 'pod-held-elsewhere', true],
    ]);

    // Agent A answers: its refresh period has passed, its view is unchanged: a heartbeat only.
    a.clock.t = Math.max(Date.now(), t0 + VIEW_REFRESH_FACTOR * 1000);
    await a.warm.flushWrites();
    const viewA2 = (await store.get(agentViewKey('na')))!;
    assert.deepEqual([viewA2.rev, viewA2.value], [viewA.rev, viewA.value], 'the unchanged view is not written again');
    const beatE = await store.get(agentBeatKey('na'));
    assert.ok(beatE, 'a heartbeat was written');
    const beat = decodeAgentBeat(beatE);
    assert.equal(beat.viewRev, viewA.rev, 'naming the view');
    assert.ok(beatE.rev > viewA.rev);
    assert.equal(await store.get(agentBeatKey('nb')), undefined, 'B is silent');

    const r = await a.admin.check();
    assert.deepEqual(
      (r.holders ?? []).map((f) => [f.kind, f.node, f.address, f.claim.pod, f.other?.holder]),
      [['pod-held-elsewhere', 'na', ipA, 'ns/pa', 'k8s:other-a:eth0']],
      'the answering agent: a settled finding',
    );
    assert.deepEqual(r.holders![0]!.keys.slice(0, 2), [agentViewKey('na'), agentBeatKey('na')], 'read with its heartbeat');
    assert.deepEqual(
      (r.unsettled ?? []).map((u) => [u.node, u.address, /holder view is \d+ s old/.test(u.reason)]),
      [['nb', ipB, true]],
      'the stale agent: unsettled, its view old',
    );
  } finally {
    await stopWarmRig(b);
    await stopWarmRig(a);
  }
}

describe('ipam check with agent heartbeats', () => {
  it('SQLite: tells the agent that answered (heartbeat after the change) from the one that did not', () => scenario(1, undefined));
  it('etcd: the same', async () => {
    const etcd = await startEtcd({ members: 1 });
    try {
      await scenario(3, etcd.url);
    } finally {
      await etcd.stop();
    }
  });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newBlock, type Block } from '../../alloc/block.js';
import { parsePrefix } from '../../ip/index.js';
import { cniHandleId } from '../../model/handle-id.js';
import { POD_RECORD_PREFIX, WARM_NETWORK } from '../../model/reserved-network.js';
import type { Entry } from '../../store/index.js';
import { type AgentView, agentViewKey, decodeAgentView, encodeAgentView, MAX_VIEW_ADDRESSES, MAX_VIEW_BYTES } from '../records/agent-view-record.js';
import { encodeBlock } from '../records/block-record.js';
import { checkHolders, type HolderInput } from './check-holders.js';
import { agentBeatKey, encodeAgentBeat } from '../records/agent-beat-record.js';
import { encodeHandle, type HandleRecord } from '../records/handle-record.js';
import { blockKey, handleKey } from '../records/keys.js';
import { agentView } from '../../../test/helpers/agent-view.js';

const NOW = Date.parse('2026-12-05T10:00:00Z');
const CIDR = parsePrefix('10.0.0.0/26');
const WARM = cniHandleId(WARM_NETWORK, 'node-a', 'r1');
const POD = 'k8s:c1:eth0';

function block(allocs: Record<number, string>, rev = 60): Entry {
  const b: Block = { ...newBlock(CIDR, 'node-a'), allocations: new Map(Object.entries(allocs).map(([o, h]) => [Number(o), h])) };
  return { key: blockKey(CIDR), value: encodeBlock(b), rev };
}

function handle(name: string, rec: Omit<HandleRecord, 'blocks'>, count: number, rev = 40): Entry {
  return { key: handleKey(name), value: encodeHandle({ ...rec, blocks: new Map([['10.0.0.0/26', count]]) }), rev };
}

function view(node: string, over: Partial<AgentView> = {}, rev = 100): Entry {
  return { key: agentViewKey(node), value: encodeAgentView(agentView(node, new Date(NOW - 2000).toISOString(), over)), rev };
}

function podRecord(node: string, key: string, addrs: string[], containerId: string, name: string, rev = 50): Entry {
  return {
    key: `${POD_RECORD_PREFIX}${node}/${key}`,
    value: JSON.stringify({ network: 'k8s', containerId, ifname: 'eth0', addrs, namespace: 'ns', name }),
    rev,
  };
}

/** A consistent node: 10.0.0.1 idle, .2 cooling, .3 sticky for ns/s-0, .4 serving pod ns/web (container c1); all under the warm handle. */
function consistent(): HolderInput {
  return {
    blocks: [block({ 1: WARM, 2: WARM, 3: WARM, 4: WARM })],
    handles: [handle(WARM, { node: 'node-a', network: WARM_NETWORK }, 4)],
    podRecords: [podRecord('node-a', POD, ['10.0.0.4'], 'c1', 'web')],
    views: [
      view('node-a', {
        idle: ['10.0.0.1'],
        cooling: ['10.0.0.2'],
        sticky: [{ addr: '10.0.0.3', namespace: 'ns', name: 's-0' }],
        pods: [{ key: POD, containerId: 'c1', ifname: 'eth0', namespace: 'ns', name: 'web', addrs: ['10.0.0.4'] }],
      }),
    ],
    now: NOW,
  };
}

const brief = (r: ReturnType<typeof checkHolders>): unknown[] =>
  r.findings.map((f) => [f.kind, f.node, f.address, f.claim.as, f.claim.pod, f.claim.containerId, f.other?.holder, f.other?.pod]);

test('checkHolders finds nothing on a consistent node', () => {
  assert.deepEqual(checkHolders(consistent()), { findings: [], stale: [] });
});

test('checkHolders: an idle address a block gives to a pod handle is held twice', () => {
  const input = consistent();
  const r = checkHolders({
    ...input,
    blocks: [block({ 1: 'k8s:c9:eth0', 2: WARM, 3: WARM, 4: WARM })],
    handles: [handle(WARM, { node: 'node-a' }, 3), handle('k8s:c9:eth0', { node: 'node-a', namespace: 'ns', pod: 'other', containerId: 'c9' }, 1)],
  });
  assert.deepEqual(brief(r), [['idle-held-elsewhere', 'node-a', '10.0.0.1', 'idle', undefined, undefined, 'k8s:c9:eth0', 'ns/other']]);
  assert.deepEqual(r.findings[0]!.keys, [agentViewKey('node-a'), blockKey(CIDR), handleKey('k8s:c9:eth0')]);
  assert.match(
    r.findings[0]!.message,
    /10\.0\.0\.1 is idle in node "node-a"'s warm pool, and block 10\.0\.0\.0\/26 gives it to handle "k8s:c9:eth0" of node "node-a" pod "ns\/other" \(container "c9"\)/,
  );
});

test('checkHolders: cooling and sticky addresses the datastore gives to no one are not held', () => {
  const r = checkHolders({ ...consistent(), blocks: [block({ 1: WARM, 4: WARM })] });
  assert.deepEqual(brief(r), [
    ['idle-not-held', 'node-a', '10.0.0.2', 'cooling', undefined, undefined, undefined, undefined],
    ['idle-not-held', 'node-a', '10.0.0.3', 'sticky', 'ns/s-0', undefined, undefined, undefined],
  ]);
});

test('checkHolders: a served pod whose address its block frees is unbacked (the view row and the pod record are one claim)', () => {
  const r = checkHolders({ ...consistent(), blocks: [block({ 1: WARM, 2: WARM, 3: WARM })] });
  assert.deepEqual(brief(r), [['pod-unbacked', 'node-a', '10.0.0.4', 'pod', 'ns/web', 'c1', undefined, undefined]]);
  assert.deepEqual(r.findings[0]!.claim.from, ['agent-view', 'pod-record']);
});

test('checkHolders: a served pod whose warm handle record is gone is unbacked', () => {
  const r = checkHolders({ ...consistent(), handles: [] });
  assert.deepEqual(brief(r), [['pod-unbacked', 'node-a', '10.0.0.4', 'pod', 'ns/web', 'c1', undefined, undefined]]);
});

test('checkHolders: a pod address given to another handle is held twice', () => {
  const r = checkHolders({ ...consistent(), blocks: [block({ 1: WARM, 2: WARM, 3: WARM, 4: 'k8s:c9:eth0' })] });
  assert.deepEqual(brief(r), [['pod-held-elsewhere', 'node-a', '10.0.0.4', 'pod', 'ns/web', 'c1', 'k8s:c9:eth0', undefined]]);
});

test("checkHolders: two nodes' pod records naming one address are a double holder", () => {
  const input = consistent();
  const r = checkHolders({
    ...input,
    podRecords: [...input.podRecords, podRecord('node-b', 'k8s:c7:eth0', ['10.0.0.4'], 'c7', 'db')],
    views: [...input.views, view('node-b')],
  });
  assert.deepEqual(brief(r), [
    ['pod-held-elsewhere', 'node-b', '10.0.0.4', 'pod', 'ns/db', 'c7', WARM, undefined],
    ['double-holder', 'node-a', '10.0.0.4', 'pod', 'ns/web', 'c1', 'k8s:c7:eth0', 'ns/db'],
  ]);
  assert.equal(r.findings[1]!.other?.node, 'node-b');
});

test('checkHolders: an idle address a pod record of the same node names is a double holder', () => {
  const input = consistent();
  const r = checkHolders({ ...input, podRecords: [...input.podRecords, podRecord('node-a', 'k8s:c5:eth0', ['10.0.0.1'], 'c5', 'late')] });
  assert.deepEqual(brief(r), [['double-holder', 'node-a', '10.0.0.1', 'idle', undefined, undefined, 'k8s:c5:eth0', 'ns/late']]);
});

test('checkHolders: a disagreement the agent may not have seen yet is stale, never a finding', () => {
  const changed = { ...consistent(), blocks: [block({ 1: 'k8s:c9:eth0', 2: WARM, 3: WARM, 4: WARM }, 120)] };
  const r = checkHolders(changed);
  assert.deepEqual(r.findings, []);
  assert.deepEqual(
    r.stale.map((s) => [s.node, s.address, s.kind]),
    [['node-a', '10.0.0.1', 'idle-held-elsewhere']],
  );
  assert.match(r.stale[0]!.reason, /changed after node "node-a"'s holder view \(revision 120 ≥ 100\)/);
  assert.deepEqual(
    checkHolders({ ...consistent(), blocks: [block({ 2: WARM, 3: WARM, 4: WARM }, 120)] }),
    { findings: [], stale: [] },
    "an idle address freed after the view (the agent's own return) is not listed",
  );
  const ownAdd = checkHolders({
    ...consistent(),
    podRecords: [...consistent().podRecords, podRecord('node-a', 'k8s:c5:eth0', ['10.0.0.1'], 'c5', 'late', 130)],
  });
  assert.deepEqual(ownAdd, { findings: [], stale: [] }, 'an idle address the same agent handed out after its view is not listed');
  const planted = { ...changed, blocks: [block({ 1: 'k8s:c9:eth0', 2: WARM, 3: WARM, 4: WARM }, 90)] };
  const cases: [string, HolderInput, RegExp][] = [
    ['old view', { ...planted, now: NOW + 60_000 }, /holder view is 62 s old \(more than 40 s\)/],
    ['queued writes', { ...planted, views: [view('node-a', { idle: ['10.0.0.1'], pending: 2 })] }, /had 2 pod record write\(s\) queued/],
  ];
  for (const [what, input, reason] of cases) {
    const s = checkHolders(input);
    assert.equal(s.findings.filter((f) => f.address === '10.0.0.1').length, 0, what);
    assert.match(s.stale.find((x) => x.address === '10.0.0.1')?.reason ?? '', reason, what);
  }
  const noView = checkHolders({
    ...consistent(),
    blocks: [block({ 1: WARM, 2: WARM, 3: 'k8s:c9:eth0' })],
    handles: [handle(WARM, { node: 'node-a' }, 2), handle('k8s:c9:eth0', { node: 'node-a' }, 1)],
    podRecords: [podRecord('node-a', POD, ['10.0.0.3'], 'c1', 'web')],
    views: [],
  });
  assert.deepEqual(noView.findings, [], 'a pod record of a node without a view');
  assert.deepEqual(
    noView.stale.map((x) => [x.address, x.kind]),
    [['10.0.0.3', 'pod-held-elsewhere']],
  );
  assert.match(noView.stale[0]!.reason, /node "node-a" has published no holder view/);
  const freed = checkHolders({ ...consistent(), blocks: [block({ 1: WARM, 2: WARM, 3: WARM }, 120)] });
  assert.deepEqual(freed, { findings: [], stale: [] }, "a pod's address freed after the view (the agent's own return after its DEL) is not listed");
  assert.equal(checkHolders(planted).findings.length, 1, 'the same block written before the view is a finding');
  assert.equal(checkHolders({ ...planted, now: NOW + 60_000, maxAgeMs: 120_000 }).findings.length, 1, "maxAgeMs overrides the view's own bound");
});

test('agent view: bounded on encode, validated on decode', () => {
  const idle = Array.from({ length: MAX_VIEW_ADDRESSES + 5 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
  const v: AgentView = {
    node: 'n',
    at: new Date(NOW).toISOString(),
    refreshMs: 1000,
    pending: 0,
    idle,
    cooling: [],
    sticky: [],
    pods: [{ key: 'k', containerId: 'c', ifname: 'eth0', addrs: ['10.2.0.1'] }],
    truncated: false,
  };
  const back = decodeAgentView({ key: agentViewKey('n'), value: encodeAgentView(v), rev: 1 });
  assert.equal(back.pods.length, 1);
  assert.equal(back.idle.length, MAX_VIEW_ADDRESSES - 1);
  assert.equal(back.truncated, true);
  const pods = Array.from({ length: 4000 }, (_, i) => ({
    key: `k8s:${'f'.repeat(64)}${i}:eth0`,
    containerId: 'f'.repeat(64),
    ifname: 'eth0',
    namespace: 'default',
    name: `web-${i}`,
    addrs: [`10.3.${i >> 8}.${i & 255}`],
  }));
  const wide = encodeAgentView({ ...v, idle: [], pods });
  assert.ok(wide.length <= MAX_VIEW_BYTES, `${wide.length} bytes`);
  assert.equal(decodeAgentView({ key: agentViewKey('n'), value: wide, rev: 1 }).truncated, true);
  assert.throws(
    () => decodeAgentView({ key: agentViewKey('m'), value: encodeAgentView(v), rev: 1 }),
    /agent-views\/m is corrupt: field "node" is "n", not the key's node/,
  );
  assert.throws(
    () => decodeAgentView({ key: agentViewKey('n'), value: JSON.stringify({ ...JSON.parse(encodeAgentView(v)), idle: ['nope'] }), rev: 1 }),
    /agent-views\/n is corrupt/,
  );
});

test('checkHolders: a heartbeat naming the view vouches for it after a change (settled), one naming another view or an old one does not', () => {
  // The view (rev 100) was built 5 minutes ago: stale on its own; the idle address .1 went to a pod at rev 150.
  const old = consistent();
  const input: HolderInput = {
    ...old,
    views: [view('node-a', { ...(JSON.parse(old.views[0]!.value) as Partial<AgentView>), at: new Date(NOW - 300_000).toISOString() }, 100)],
    blocks: [block({ 1: 'k8s:c9:eth0', 2: WARM, 3: WARM, 4: WARM }, 150)],
    handles: [handle(WARM, { node: 'node-a' }, 3), handle('k8s:c9:eth0', { node: 'node-a', namespace: 'ns', pod: 'other', containerId: 'c9' }, 1)],
  };
  const beat = (viewRev: number, rev: number, agoMs = 1000): Entry => ({
    key: agentBeatKey('node-a'),
    value: encodeAgentBeat({ viewRev, at: new Date(NOW - agoMs).toISOString() }),
    rev,
  });
  const none = checkHolders(input);
  assert.deepEqual(
    [none.findings, none.stale.map((x) => x.reason)],
    [[], [`node "node-a"'s holder view is 300 s old (more than 40 s): its agent is down or cannot reach the datastore`]],
  );

  const vouched = checkHolders({ ...input, beats: [beat(100, 160)] });
  assert.deepEqual(brief(vouched), [['idle-held-elsewhere', 'node-a', '10.0.0.1', 'idle', undefined, undefined, 'k8s:c9:eth0', 'ns/other']]);
  assert.deepEqual(vouched.findings[0]!.keys, [agentViewKey('node-a'), agentBeatKey('node-a'), blockKey(CIDR), handleKey('k8s:c9:eth0')]);

  // A beat before the change: fresh, but the agent has not answered the change yet.
  assert.match(checkHolders({ ...input, beats: [beat(100, 140)] }).stale[0]!.reason, /blocks\/10\.0\.0\.0-26 changed after .* \(revision 150 ≥ 140\)/);
  // A beat naming another view revision, or written no later than the view, or old itself: the view stands on its own (stale).
  for (const b of [beat(90, 160), beat(120, 160), beat(100, 100), beat(100, 160, 300_000)])
    assert.match(checkHolders({ ...input, beats: [b] }).stale[0]!.reason, /300 s old/, b.value);
  // A corrupt beat is skipped (the view stands on its own).
  assert.match(checkHolders({ ...input, beats: [{ key: agentBeatKey('node-a'), value: '{', rev: 160 }] }).stale[0]!.reason, /300 s old/);
});

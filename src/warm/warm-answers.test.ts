import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assignOrdinal, newBlock, ordinalOf, type Block } from '../alloc/block.js';
import { parseAddr, parsePrefix } from '../ip/index.js';
import { type AgentView, agentViewKey, blockKey, encodeAgentView, encodeBlock } from '../cluster/records/index.js';
import { encodeWarmPodRecord, warmPodRecordKey } from '../model/warm-pod-record.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { warmHandlePrefix } from './warm-handle.js';
import { awaitWarmAnswers, MAX_POLL_MS, nodeAnswer, warmNodesIn } from './warm-answers.js';
import { agentView } from '../../test/helpers/agent-view.js';

const WA = `${warmHandlePrefix('node-a')}r1`;
const WB = `${warmHandlePrefix('node-b')}r1`;

/** A block of `cidr` on `node` holding each address of `held` for its handle. */
function block(cidr: string, node: string, held: Record<string, string>): Block {
  const p = parsePrefix(cidr);
  let b = newBlock(p, node);
  for (const [a, h] of Object.entries(held)) b = assignOrdinal(b, ordinalOf(p, parseAddr(a)), h, true);
  return b;
}

function view(node: string, configRev: number | undefined, v: Partial<AgentView> = {}): AgentView {
  return agentView(node, '2026-12-05T00:00:00.000Z', { configRev, ...v });
}

test('warmNodesIn: the nodes whose warm handles hold addresses in the space (and on the nodes asked), with those no pod record names', () => {
  const blocks = [
    block('10.0.0.0/28', 'node-a', { '10.0.0.1': WA, '10.0.0.2': WA, '10.0.0.3': 'net:c1:eth0', '10.0.0.9': WA }),
    block('10.0.0.16/28', 'node-b', { '10.0.0.17': WB }),
    block('10.9.0.0/28', 'node-a', { '10.9.0.1': WA }),
  ];
  const used = (node: string, a: string) => node === 'node-a' && a === '10.0.0.2';
  assert.deepEqual(warmNodesIn(blocks, { space: [parsePrefix('10.0.0.0/27')] }, used), [
    { node: 'node-a', idle: ['10.0.0.1', '10.0.0.9'] },
    { node: 'node-b', idle: ['10.0.0.17'] },
  ]);
  // One address inside a block; a node holding only in-use addresses in scope still has to answer.
  assert.deepEqual(warmNodesIn(blocks, { space: [parsePrefix('10.0.0.2/32')] }, used), [{ node: 'node-a', idle: [] }]);
  // Not a warm handle's: no node to wait for.
  assert.deepEqual(warmNodesIn(blocks, { space: [parsePrefix('10.0.0.3/32')] }, used), []);
  // A node selector: only the nodes it names.
  assert.deepEqual(
    warmNodesIn(blocks, { space: [parsePrefix('10.0.0.0/8')], onNode: (n) => n === 'node-b' }, used).map((n) => n.node),
    ['node-b'],
  );
});

test("nodeAnswer: only a view naming the change's generation or a later one; what it still holds in the space", () => {
  const space = [parsePrefix('10.0.0.0/28')];
  assert.equal(nodeAnswer(undefined, 7, space), undefined, 'no view');
  assert.equal(nodeAnswer(view('node-a', undefined), 7, space), undefined, "an earlier agent's view (no configRev)");
  assert.equal(nodeAnswer(view('node-a', 6), 7, space), undefined, 'an older generation');
  const a = nodeAnswer(
    view('node-a', 9, {
      idle: ['10.0.0.20'],
      cooling: ['10.0.0.4', '10.0.0.30'],
      sticky: [{ addr: '10.0.0.5' }],
      pods: [
        { key: 'net:c1:eth0', containerId: 'c1', ifname: 'eth0', namespace: 'ns', name: 'p1', addrs: ['10.0.0.2', 'fd00::2'] },
        { key: 'net:c2:eth0', containerId: 'c2', ifname: 'eth0', addrs: ['10.0.0.3'] },
      ],
    }),
    7,
    space,
  );
  assert.deepEqual(a, {
    node: 'node-a',
    at: '2026-12-05T00:00:00.000Z',
    inUse: [
      { addr: '10.0.0.2', attachment: 'net:c1:eth0', pod: 'ns/p1' },
      { addr: '10.0.0.3', attachment: 'net:c2:eth0' },
    ],
    cooling: ['10.0.0.4'],
    sticky: ['10.0.0.5'],
    idle: [],
  });
});

test("awaitWarmAnswers: waits for each holding node's view naming the generation; a silent node is named at the deadline with its idle addresses", async () => {
  const store = new MemoryStore();
  const put = (key: string, value: string) => store.txn([], [{ type: 'put', key, value }]);
  const b = block('10.0.0.0/28', 'node-a', { '10.0.0.1': WA, '10.0.0.2': WA });
  await put(blockKey(b.cidr), encodeBlock(b));
  const b2 = block('10.0.0.16/28', 'node-b', { '10.0.0.17': WB });
  await put(blockKey(b2.cidr), encodeBlock(b2));
  await put(warmPodRecordKey('node-a', 'net:c1:eth0'), encodeWarmPodRecord({ addrs: ['10.0.0.2'], namespace: 'ns', name: 'p1' }));
  await put(agentViewKey('node-a'), encodeAgentView(view('node-a', 4)));
  const space = [parsePrefix('10.0.0.0/27')];
  // node-a answers generation 5 after 100 ms; node-b never does.
  setTimeout(() => {
    const v = view('node-a', 5, { pods: [{ key: 'net:c1:eth0', containerId: 'c1', ifname: 'eth0', namespace: 'ns', name: 'p1', addrs: ['10.0.0.2'] }] });
    void put(agentViewKey('node-a'), encodeAgentView(v));
  }, 100);
  const t0 = performance.now();
  const r = await awaitWarmAnswers(store, { space }, 5, { timeoutMs: 600, pollMs: 20 });
  const took = performance.now() - t0;
  assert.ok(took >= 550 && took < 3000, `waited ${took.toFixed(0)} ms for a 600 ms timeout`);
  assert.deepEqual(
    r.answered.map((a) => [a.node, a.inUse.map((u) => `${u.addr} ${u.pod}`)]),
    [['node-a', ['10.0.0.2 ns/p1']]],
  );
  assert.ok(r.answered[0]!.ms >= 90, `answered after ${r.answered[0]!.ms} ms`);
  assert.deepEqual(r.silent, [{ node: 'node-b', idle: ['10.0.0.17'] }]);
  // A corrupt view is no answer; timeout 0: one look.
  await put(agentViewKey('node-b'), '{"broken"');
  const once = await awaitWarmAnswers(store, { space }, 5, { timeoutMs: 0 });
  assert.deepEqual(
    once.silent.map((n) => n.node),
    ['node-b'],
  );
  // Nothing in scope held by a warm pool: nothing to wait for, at once.
  const none = await awaitWarmAnswers(store, { space: [parsePrefix('10.1.0.0/16')] }, 5, { timeoutMs: 10_000 });
  assert.deepEqual(none, { answered: [], silent: [], unreadableBlocks: [] });
  // A block record that does not decode: named, since whose addresses it holds is unknown.
  await put('blocks/10.0.0.32-28', '{"broken"');
  const unreadable = await awaitWarmAnswers(store, { space: [parsePrefix('10.1.0.0/16')] }, 5, { timeoutMs: 0 });
  assert.deepEqual(unreadable.unreadableBlocks, ['blocks/10.0.0.32-28']);
  await store.close();
});

test('awaitWarmAnswers: a silent node is read less and less often (pauses doubling up to MAX_POLL_MS), not every 100 ms', async () => {
  const store = new MemoryStore();
  const put = (key: string, value: string) => store.txn([], [{ type: 'put', key, value }]);
  const b = block('10.0.0.0/28', 'node-a', { '10.0.0.1': WA });
  await put(blockKey(b.cidr), encodeBlock(b));
  let looks = 0;
  const getMany = store.getMany.bind(store);
  store.getMany = (keys) => {
    looks++;
    return getMany(keys);
  };
  const r = await awaitWarmAnswers(store, { space: [parsePrefix('10.0.0.0/27')] }, 5, { timeoutMs: 2500 });
  assert.deepEqual(
    r.silent.map((n) => n.node),
    ['node-a'],
  );
  // 0, 100, 300, 700, 1500, 2500 ms: 6 looks (25 at a fixed 100 ms).
  assert.ok(looks >= 5 && looks <= 7, `${looks} looks in 2.5 s`);
  assert.equal(MAX_POLL_MS, 1000);
  await store.close();
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verbLabel } from './agent-stats.js';
import { parseAgentStatus } from './parse-agent-status.js';

test('verb labels: the CNI verbs, "none" when unset, "other" for anything a caller invents', () => {
  for (const v of ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS', 'VERSION']) assert.equal(verbLabel(v), v);
  assert.equal(verbLabel(undefined), 'none');
  assert.equal(verbLabel(''), 'none');
  for (const v of ['add', 'X1', 'ADD ', '"}\n']) assert.equal(verbLabel(v), 'other');
});

test('agent status answers are checked before they are printed', () => {
  const good = {
    pid: 1,
    node: 'n',
    socket: '/s',
    uptimeSeconds: 0,
    inFlight: 0,
    requests: { ADD: { ok: 1 } },
    latencyMs: {},
    backends: {},
    datastore: { roundTrips: 0, groupCommits: 0, groupedAdds: 0, open: [] },
    localScans: { full: 0, incremental: 0, reread: 0 },
  };
  assert.equal(parseAgentStatus(JSON.stringify(good), '/s').node, 'n');
  const podCache = { synced: true, pods: 3, namespaces: 2, relists: 0, resumes: 1, events: 4, errors: 0 };
  assert.equal(parseAgentStatus(JSON.stringify({ ...good, podCache }), '/s').podCache?.pods, 3);
  for (const bad of [
    'hello',
    '[]',
    '{"pid": 1}',
    JSON.stringify({ ...good, requests: { ADD: null } }),
    JSON.stringify({ ...good, warmPool: { pools: null } }),
    JSON.stringify({ ...good, podCache: { ...podCache, synced: 'yes' } }),
  ]) {
    assert.throws(() => parseAgentStatus(bad, '/run/x.sock'), /\/run\/x\.sock answered .*not an agent status/, bad);
  }
});

test('a headroom part is checked too, and printed on one line', async () => {
  const { formatAgentStatus } = await import('./format-status.js');
  const base = {
    pid: 1,
    node: 'n',
    socket: '/s',
    uptimeSeconds: 0,
    inFlight: 0,
    requests: {},
    latencyMs: {},
    backends: {},
    datastore: { roundTrips: 0, groupCommits: 0, groupedAdds: 0, open: [] },
    localScans: { full: 0, incremental: 0, reread: 0 },
  };
  const ipv4 = {
    family: 4,
    headroom: 0,
    free: 0,
    idle: 0,
    claimable: 0,
    claimableBlocks: 0,
    blocks: 1,
    maxBlocks: 1,
    claimLimit: 'maxBlocksPerHost',
    mayBorrow: false,
    pools: ['p'],
    exhausted: true,
  };
  const headroom = { intervalMs: 30000, clearAt: 4, taint: 'kube', families: { ipv4 }, at: '2026-12-02T00:00:00Z', taintValue: 'ipv4' };
  const s = parseAgentStatus(JSON.stringify({ ...base, headroom }), '/s');
  assert.match(
    formatAgentStatus(s),
    /^headroom: ipv4 0 EXHAUSTED \(0 free in 1\/1 blocks, 0 idle, 0 in 0 claimable blocks, bound by maxBlocksPerHost\); tainted podipam\.io\/ip-exhausted=ipv4:NoSchedule$/m,
  );
  assert.throws(() => parseAgentStatus(JSON.stringify({ ...base, headroom: { families: { ipv4: { headroom: 'x' } } } }), '/s'), /not an agent status/);
});

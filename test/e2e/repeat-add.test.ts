/**
 * A repeated ADD (same container id and interface, same network) whose pod's annotations or
 * CNI_ARGS changed meanwhile — a different podipam.io/ip, podipam.io/pools or IP= — returns the
 * attachment's existing result or a clear error, never a second address for one attachment:
 * through the built plugin on the `cluster` back end (SQLite), the `local` back end (host-local
 * files), and the agent's warm pool through the native shim (idle-queue and direct attachments).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, type PluginCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { formatAddr } from '../../src/ip/index.js';

interface Answer {
  readonly code?: number;
  readonly msg?: string;
  readonly ips?: readonly { address: string }[];
}

const ANN = 'io.kubernetes.cri.pod-annotations';

function caller(bin: string, ipam: Record<string, unknown>, env: Record<string, string> = {}) {
  return async (containerId: string, o: { annotations?: Record<string, string>; args?: string } = {}): Promise<Answer> => {
    const call: PluginCall = {
      command: 'ADD',
      containerId,
      ifname: 'eth0',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=${containerId};K8S_POD_UID=uid-${containerId}${o.args ?? ''}`,
      config: { cniVersion: '1.0.0', name: 'rnet', ipam, ...(o.annotations ? { runtimeConfig: { [ANN]: o.annotations } } : {}) },
      env,
    };
    const r = await runPlugin(bin, call);
    assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.stdout} ${r.stderr}`);
    return JSON.parse(r.stdout) as Answer;
  };
}

const addrs = (a: Answer): string[] => {
  assert.equal(a.code, undefined, `an error: ${a.msg}`);
  return a.ips!.map((x) => x.address);
};

async function handleAddrs(url: string, handle: string): Promise<string[]> {
  const ipam = new ClusterIpam(await openStore(url));
  try {
    return ((await ipam.addressesOf(handle)) ?? []).map((a) => formatAddr(a.addr));
  } finally {
    await ipam.store.close();
  }
}

test(
  'cluster back end: a repeated ADD with other annotations or IP= returns what the attachment holds, or 101 — never a second address',
  { timeout: 120_000 },
  async () => {
    const dir = makeTempDir('repeat-add-cluster');
    try {
      const url = `sqlite:${join(dir.path, 'ds.db')}`;
      for (const [name, cidr] of [
        ['default', '10.71.0.0/24'],
        ['other', '10.72.0.0/24'],
        ['other6', 'fd72::/120'],
      ] as const) {
        const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
        assert.equal(r.code, 0, r.stderr);
      }
      const add = caller(PODIPAM_BIN, { type: 'podipam', datastore: url, nodeName: 'n1', cacheDir: join(dir.path, 'cache'), pools: ['default'] });

      const first = addrs(await add('c1'));
      assert.equal(first.length, 1);
      // Another pool list (with an IPv6 pool the first ADD had no family of): the same answer.
      assert.deepEqual(addrs(await add('c1', { annotations: { 'podipam.io/pools': 'other,other6' } })), first);
      // A fixed address it does not hold: refused naming what it holds.
      const asks: { annotations?: Record<string, string>; args?: string }[] = [
        { annotations: { 'podipam.io/ip': '10.72.0.50' } },
        { args: ';IP=10.71.0.60' },
        { annotations: { 'cni.projectcalico.org/ipAddrs': '["10.71.0.61"]' } },
      ];
      for (const o of asks) {
        const a = await add('c1', o);
        assert.equal(a.code, 101, JSON.stringify(a));
        assert.match(a.msg!, new RegExp(`already holds ${first[0]!.split('/')[0]!.replaceAll('.', '\\.')} from its earlier ADD`));
      }
      assert.deepEqual(await handleAddrs(url, 'rnet:c1:eth0'), [first[0]!.split('/')[0]], 'the attachment holds one address');

      // An attachment placed by podipam.io/ip, repeated with the same annotation: its address.
      const fixed = addrs(await add('c2', { annotations: { 'podipam.io/ip': '10.71.0.77' } }));
      assert.deepEqual(addrs(await add('c2', { annotations: { 'podipam.io/ip': '10.71.0.77' } })), fixed);
      assert.deepEqual(addrs(await add('c2')), fixed, 'without its annotation: the same');
      assert.equal((await add('c2', { annotations: { 'podipam.io/ip': '10.71.0.78' } })).code, 101);
      assert.deepEqual(await handleAddrs(url, 'rnet:c2:eth0'), ['10.71.0.77']);
    } finally {
      dir.remove();
    }
  },
);

test('local back end: a repeated ADD with another IP= is refused as a duplicate allocation, never a second file', { timeout: 60_000 }, async () => {
  const dir = makeTempDir('repeat-add-local');
  try {
    const dataDir = join(dir.path, 'data');
    const add = caller(PODIPAM_BIN, { type: 'podipam', dataDir, ranges: [[{ subnet: '10.73.0.0/24' }]] });
    const first = addrs(await add('c1'));
    const again = await add('c1');
    assert.equal(again.code, 101);
    assert.match(again.msg!, /has been allocated to c1, duplicate allocation is not allowed/);
    const other = await add('c1', { args: ';IP=10.73.0.99' });
    assert.equal(other.code, 101, JSON.stringify(other));
    assert.match(other.msg!, /duplicate allocation is not allowed/);
    const files = readdirSync(join(dataDir, 'rnet')).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f));
    assert.deepEqual(files, [first[0]!.split('/')[0]], 'one address file for the attachment');
  } finally {
    dir.remove();
  }
});

test('warm pool agent: a repeated ADD with other annotations returns the attachment, or 101 — never a second address', { timeout: 180_000 }, async () => {
  requireShim();
  const dir = makeTempDir('repeat-add-warm');
  let agent: RunningAgent | undefined;
  try {
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    for (const [name, cidr] of [
      ['pool-a', '10.74.0.0/16'],
      ['pool-b', '10.75.0.0/16'],
    ] as const) {
      const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
      assert.equal(r.code, 0, r.stderr);
    }
    const socket = join(dir.path, 'run', 'agent.sock');
    agent = await startAgent(socket, [
      '--node',
      'rnode',
      '--datastore',
      url,
      '--data-dir',
      join(dir.path, 'agent'),
      '--pools',
      'pool-a',
      '--min-idle',
      '2',
      '--max-idle',
      '4',
      '--capacity',
      '32',
      '--cooldown',
      '1s',
    ]);
    for (let i = 0; ; i++) {
      const s = await agent.status();
      if (s.warmPool?.ready && (s.warmPool.pools.ipv4?.idle ?? 0) >= 2) break;
      assert.ok(i < 200, `warm pool not ready: ${JSON.stringify(s.warmPool)}`);
      await sleep(25);
    }
    const add = caller(SHIM_BIN, { type: 'podipam', agent: socket }, { PODIPAM_PLUGIN: '' });

    // From the idle queue, then repeated asking for another pool and for a fixed address.
    const pooled = addrs(await add('w1'));
    assert.deepEqual(addrs(await add('w1', { annotations: { 'podipam.io/pools': 'pool-b' } })), pooled);
    const fixedOther = await add('w1', { annotations: { 'podipam.io/ip': '10.75.0.9' } });
    assert.equal(fixedOther.code, 101, JSON.stringify(fixedOther));
    assert.match(fixedOther.msg!, /already holds 10\.74\.\d+\.\d+ from its earlier ADD/);

    // Allocated directly (annotated), then repeated with another fixed address and another pool.
    const direct = addrs(await add('w2', { annotations: { 'podipam.io/ip': '10.75.0.20' } }));
    assert.deepEqual(
      direct.map((a) => a.split('/')[0]),
      ['10.75.0.20'],
    );
    const moved = await add('w2', { annotations: { 'podipam.io/ip': '10.75.0.21' } });
    assert.equal(moved.code, 101, JSON.stringify(moved));
    assert.deepEqual(addrs(await add('w2', { annotations: { 'podipam.io/pools': 'pool-a' } })), direct);
    await agent.stop();
    agent = undefined;
    assert.deepEqual(await handleAddrs(url, 'rnet:w2:eth0'), ['10.75.0.20'], 'the direct attachment holds one address');
  } finally {
    await agent?.stop();
    dir.remove();
  }
});

/**
 * `podipam pool drain` (built bin/podipam, a real SQLite file) names what it lists: a pod's
 * addresses under the pod, a node agent's warm pool's idle addresses apart as that node's warm
 * pool's (no pod's), a warm-pool pod under its own name (the agent's pod record), never a warm
 * handle as a pod — in its text and in `-o json` (counts `inUse` and `idle`, `nodes[].warm`).
 * The warm pool's records are written as the agent writes them (a warm handle of the node
 * assigned through the allocator, a pod record `agent-pods/<node>/<attachment>`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ClusterIpam } from '../../src/cluster/index.js';
import { formatAddr } from '../../src/ip/index.js';
import { openStore } from '../../src/store/index.js';
import { makeTempDir } from '../helpers/tmp.js';
import { runCli } from './serve-harness.js';

test('pool drain lists pods and warm pools apart, text and JSON', { timeout: 60_000 }, async () => {
  const dir = makeTempDir('pool-drain-held');
  try {
    const url = `sqlite:${join(dir.path, 'p.db')}`;
    const cli = async (...args: string[]): Promise<string> => {
      const r = await runCli(['--datastore', url, ...args]);
      assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stderr}${r.stdout}`);
      return r.stdout;
    };
    await cli('pool', 'create', 'p', '--cidr', '10.77.0.0/24', '--block-size', '28');
    const store = await openStore(url);
    let pod: string;
    let warm: string[];
    try {
      const ipam = new ClusterIpam(store);
      pod = formatAddr((await ipam.assign({ node: 'node-a', handle: 'net:c0:eth0', auto: { 4: 1 }, attrs: { namespace: 'shop', pod: 'db-0' } }))[0]!.addr);
      warm = (await ipam.assign({ node: 'node-b', handle: 'podipam-warm:node-b:r1', auto: { 4: 3 } })).map((x) => formatAddr(x.addr));
      const record = {
        network: 'net',
        containerId: 'c1',
        ifname: 'eth0',
        addrs: [warm[0]],
        warmHandles: ['podipam-warm:node-b:r1'],
        since: new Date().toISOString(),
        namespace: 'shop',
        name: 'web-0',
        uid: 'u1',
      };
      await store.txn([], [{ type: 'put', key: 'agent-pods/node-b/net:c1:eth0', value: JSON.stringify(record) }]);
    } finally {
      await store.close();
    }

    // No agent runs here: the drain cannot hear node-b's answer. Waiting, it names the agent and
    // the idle addresses it may still hand out, and exits 3 (the pool is draining all the same).
    const waited = await runCli(['--datastore', url, 'pool', 'drain', 'p', '--warm-timeout', '300ms']);
    assert.equal(waited.code, 3, waited.stdout + waited.stderr);
    assert.ok(
      waited.stdout.startsWith(
        `pool "p": node node-b's agent has not applied it after 0.3 s (stopped, or cut off from the datastore?): it may hand ${warm[1]}, ${warm[2]} to pods until it does\n`,
      ),
      waited.stdout,
    );
    const text = await cli('pool', 'drain', 'p', '--warm-timeout', '0');
    assert.equal(
      text,
      [
        `pool "p": not waited for (--warm-timeout 0): node node-b's agent has not applied it yet: it may hand ${warm[1]}, ${warm[2]} to pods until it does`,
        `pool "p" draining: 4 addresses still held: 2 in use by 2 pods, 2 idle in warm pools (no pod's: the node agents return them)`,
        '  node node-a: 1 pod',
        `    shop/db-0  ${pod}`,
        "  node node-b: 1 pod; 2 idle addresses held by node node-b's warm pool",
        `    shop/web-0  ${warm[0]}`,
        `    warm pool, idle (podipam-warm:node-b:r1)  ${warm[1]}, ${warm[2]}`,
        '',
      ].join('\n'),
    );
    const json = JSON.parse(await cli('pool', 'drain', 'p', '-o', 'json', '--warm-timeout', '0')) as Record<string, unknown>;
    assert.deepEqual([json.allocated, json.inUse, json.idle], [4, 2, 2]);
    assert.deepEqual(json.nodes, [
      { node: 'node-a', pods: [{ pod: 'shop/db-0', handle: 'net:c0:eth0', addresses: [pod] }] },
      {
        node: 'node-b',
        pods: [{ pod: 'shop/web-0', handle: 'net:c1:eth0', addresses: [warm[0]] }],
        warm: { handles: ['podipam-warm:node-b:r1'], idle: [warm[1], warm[2]] },
      },
    ]);
    const show = await cli('pool', 'show', 'p');
    assert.match(show, /^held: 4 addresses in 2 blocks \(2 in use, 2 idle in warm pools\)$/m, show);
  } finally {
    dir.remove();
  }
});

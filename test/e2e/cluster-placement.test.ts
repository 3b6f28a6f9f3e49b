/**
 * Pod placement annotations in cluster mode, through the BUILT plugin (one process per call,
 * as a runtime runs it) with the pod's annotations in
 * `runtimeConfig["io.kubernetes.cri.pod-annotations"]` and the pod in CNI_ARGS K8S_POD_*: on a
 * SQLite file and on a real etcd. podipam.io/pools picks the pools (per family), podipam.io/ip
 * gets exactly that address (a second pod asking for it: 101 naming the first), Calico's
 * ipv4pools (a name or a CIDR) and ipAddrs work, a malformed annotation, an unknown pool or one
 * whose nodeSelector excludes the node is code 7 naming annotation, pod and value, an
 * annotation together with CNI_ARGS IP= is 7 naming both; a pod without annotations is
 * served as before at the same datastore cost; `ipam show --pod` shows the pod.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PODIPAM_BIN, type PluginRun, runPlugin, runCliSync } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';
import { etcdPost, startEtcd, type EtcdCluster } from '../helpers/etcd.js';

interface Answer {
  readonly code?: number;
  readonly msg?: string;
  readonly ips?: readonly { address: string }[];
}

async function scenario(db: string, cacheDir: string): Promise<void> {
  const cli = (...args: string[]) => {
    const r = runCliSync(db, args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    return r.stdout;
  };
  cli('pool', 'create', 'default', '--cidr', '10.60.0.0/24', '--block-size', '28');
  cli('pool', 'create', 'blue', '--cidr', '10.61.0.0/24', '--block-size', '28');
  cli('pool', 'create', 'blue6', '--cidr', 'fd61::/120', '--block-size', '124');
  cli('pool', 'create', 'zoned', '--cidr', '10.62.0.0/24', '--node-selector', 'zone=b');
  cli('node', 'add', 'n1', '--label', 'zone=a');

  const conf = (annotations?: Record<string, string>) => ({
    cniVersion: '1.0.0',
    name: 'place',
    ipam: { type: 'podipam', datastore: db, nodeName: 'n1', cacheDir, pools: ['default'] },
    ...(annotations ? { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': annotations } } : {}),
  });
  const add = async (pod: string, annotations?: Record<string, string>, extraArgs = ''): Promise<Answer & { stats: { roundTrips: number } }> => {
    const r: PluginRun = await runPlugin(PODIPAM_BIN, {
      command: 'ADD',
      containerId: `c-${pod}`,
      ifname: 'eth0',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=${pod};K8S_POD_UID=uid-${pod}${extraArgs}`,
      config: conf(annotations),
      env: { PODIPAM_STATS: '1' },
    });
    // No stats line: the call was refused before the datastore was opened.
    const stats = /podipam-stats (\{.*\})/.exec(r.stderr);
    assert.ok(r.code === 0 || r.code === 1, `${pod}: exit ${r.code} ${r.stderr}`);
    return { ...(JSON.parse(r.stdout) as Answer), stats: stats ? (JSON.parse(stats[1]!) as { roundTrips: number }) : { roundTrips: 0 } };
  };
  const ips = (a: Answer): string[] => {
    assert.equal(a.code, undefined, `an error: ${a.msg}`);
    return a.ips!.map((x) => x.address);
  };
  const refused = (a: Answer, code: number, ...parts: string[]) => {
    assert.equal(a.code, code, JSON.stringify(a));
    for (const p of parts) assert.ok(a.msg!.includes(p), `${JSON.stringify(a.msg)} names ${JSON.stringify(p)}`);
  };

  // Without annotations: the configured pool, and the steady-state cost of a pod start.
  assert.match(ips(await add('plain-0'))[0]!, /^10\.60\.0\.\d+\/28$/);
  const plain = await add('plain-1');
  assert.match(ips(plain)[0]!, /^10\.60\.0\.\d+\/28$/);
  assert.equal(plain.stats.roundTrips, 1, 'a pod without annotations: one round trip in the steady state');
  // An annotated pod whose pool's block the node already holds costs the same.
  const same = await add('same-pool', { 'podipam.io/pools': 'default' });
  assert.equal(same.stats.roundTrips, plain.stats.roundTrips, 'podipam.io/pools of an already-claimed pool costs no extra round trip');

  // podipam.io/pools chooses the pools, per family (dual stack from a v4 and a v6 pool).
  const dual = ips(await add('dual', { 'podipam.io/pools': 'blue,blue6' }));
  assert.equal(dual.length, 2);
  assert.match(dual[0]!, /^10\.61\.0\.\d+\/28$/);
  assert.match(dual[1]!, /^fd61::[0-9a-f]+\/124$/);
  assert.match(ips(await add('blue-only', { 'podipam.io/pools': 'blue' })).join(' '), /^10\.61\.0\.\d+\/28$/);

  // podipam.io/ip: exactly that address; a second pod asking for it → 101 naming the first.
  assert.deepEqual(ips(await add('fixed', { 'podipam.io/ip': '10.61.0.200' })), ['10.61.0.200/28']);
  refused(await add('fixed-2', { 'podipam.io/ip': '10.61.0.200' }), 101, '10.61.0.200', 'held by pod shop/fixed', 'handle "place:c-fixed:eth0"');
  refused(await add('outside', { 'podipam.io/ip': '192.168.9.9' }), 101, '192.168.9.9', 'not in any pool');

  // Calico's annotations, with Calico's meaning.
  assert.match(ips(await add('calico-name', { 'cni.projectcalico.org/ipv4pools': '["blue"]' }))[0]!, /^10\.61\.0\./);
  assert.match(ips(await add('calico-cidr', { 'cni.projectcalico.org/ipv4pools': '["10.61.0.0/24"]' }))[0]!, /^10\.61\.0\./);
  assert.deepEqual(ips(await add('calico-ip', { 'cni.projectcalico.org/ipAddrs': '["10.60.0.77"]' })), ['10.60.0.77/28']);

  // Code 7: malformed, unknown pool, a pool not selecting the node, annotation + IP=.
  const bad = await add('bad', { 'podipam.io/ip': 'nope' });
  refused(bad, 7, 'podipam.io/ip', '"nope"', 'pod shop/bad');
  assert.equal(bad.stats.roundTrips, 0, 'a malformed annotation is refused before the datastore is opened');
  refused(await add('unknown', { 'podipam.io/pools': 'nosuch' }), 7, 'podipam.io/pools', 'pod shop/unknown', 'pool "nosuch" does not exist');
  refused(await add('zone', { 'podipam.io/pools': 'zoned' }), 7, 'podipam.io/pools', 'pod shop/zone', 'pool "zoned" does not select node "n1"');
  refused(await add('both', { 'podipam.io/pools': 'blue' }, ';IP=10.60.0.99'), 7, 'podipam.io/pools', 'pod shop/both', '10.60.0.99', 'CNI_ARGS IP');

  // The pod, shown.
  const shown = JSON.parse(cli('ipam', 'show', '--pod', 'shop/dual', '-o', 'json')) as {
    items: { pod: string; handle: string; node: string; network: string; addresses: { ip: string }[] }[];
  };
  assert.equal(shown.items.length, 1);
  assert.equal(shown.items[0]!.pod, 'shop/dual');
  assert.equal(shown.items[0]!.handle, 'place:c-dual:eth0');
  assert.equal(shown.items[0]!.node, 'n1');
  assert.deepEqual(
    shown.items[0]!.addresses.map((a) => a.ip),
    dual.map((d) => d.split('/')[0]),
  );
  const table = cli('ipam', 'show', '--pod', 'shop/fixed');
  assert.match(table, /^POD +HANDLE +ADDRESSES/);
  assert.match(table, /shop\/fixed +place:c-fixed:eth0 +10\.61\.0\.200 +place +eth0 +n1/);
  assert.match(cli('ipam', 'show', '--pod', 'shop/nobody'), /pod shop\/nobody holds no address/);
}

test('cluster mode on SQLite: placement annotations through the built plugin', { timeout: 180_000 }, () =>
  withTempDir('cluster-placement', (dir) => scenario(`sqlite:${join(dir, 'ipam.db')}`, join(dir, 'cache'))),
);

let etcd: EtcdCluster | undefined;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

test('cluster mode on etcd: placement annotations through the built plugin', { timeout: 180_000 }, () =>
  withTempDir('cluster-placement-etcd', async (dir) => {
    await etcdPost(etcd!.members[0]!, 'kv/deleterange', { key: Buffer.of(0).toString('base64'), range_end: Buffer.of(0).toString('base64') });
    await scenario(etcd!.url, join(dir, 'cache'));
  }),
);

/**
 * `podipam import calico` through the built bin/podipam, from Calico's Kubernetes datastore (a
 * kubectl List file) into a SQLite and an etcd podipam store, and from Calico's etcd v3
 * datastore (its keys written into a real etcd under /calico, beside podipam's own /podipam/
 * keys in the same etcd) with `--from-etcd`. Each run: three nodes, dual-stack pods, tunnel
 * addresses, and an address already held in podipam by another pod — listed, nothing written,
 * exit 1; `--skip-conflicts` writes the rest; the dry run's report is the real run's; a re-run
 * writes nothing; `ipam check` is clean; the blocks keep their nodes; a DEL through the built
 * plugin in cluster mode with the original container id frees exactly that pod's addresses; and
 * new ADDs never get an imported address.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterIpam } from '../../src/cluster/index.js';
import { decodeBlock } from '../../src/cluster/records/block-record.js';
import { blockKey } from '../../src/cluster/records/keys.js';
import { formatAddr, parseAddr, parsePrefix } from '../../src/ip/index.js';
import { openStore } from '../../src/store/index.js';
import { CALICO_SCENARIO_EXPECTED, calicoEtcdPairs, calicoKddList, calicoScenario, containerId } from '../helpers/calico-fixture.js';
import { etcdPost, startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { PODIPAM_BIN, clusterCall, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { runCli } from './serve-harness.js';

const NET = 'k8s-pod-network';
const INTRUDER_IP = '10.244.0.71'; // db-1's address in Calico
const INTRUDER = 'other-net:intruder:eth0';
const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const podHandle = (n: number): string => `${NET}:${containerId(n)}:eth0`;

let etcd: EtcdCluster;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

interface Report {
  dryRun: boolean;
  refused: boolean;
  plan: { pools: { name: string }[]; blocks: unknown[]; addresses: { ip: string; holder: { handle: string } }[]; conflicts: unknown[] };
  outcome: {
    conflicts: { kind: string; subject: string; detail: string }[];
    adopted: number;
    already: number;
    skipped: number;
    wroteNothing: boolean;
    poolsCreated: string[];
    blocksWritten: string[];
  };
}

/** The whole migration against `datastore`, the source given by `source` (the import's arguments). */
async function migrate(datastore: string, source: readonly string[]): Promise<void> {
  const tmp = makeTempDir('import-calico');
  try {
    const cli = (args: readonly string[]) => runCli(['--datastore', datastore, ...args]);
    const imp = (extra: readonly string[]) => cli(['import', 'calico', ...source, '-o', 'json', ...extra]);

    // 1. podipam already has Calico's IPv4 pool, and another pod holds db-1's address in it.
    const store = await openStore(datastore);
    try {
      const ipam = new ClusterIpam(store);
      await ipam.createPool({ name: 'default-ipv4-ippool', cidr: '10.244.0.0/16', blockSize: 26 });
      await ipam.assign({
        node: 'node-b',
        handle: INTRUDER,
        attrs: { network: 'other-net', containerId: 'intruder', ifname: 'eth0', namespace: 'default', pod: 'intruder' },
        ips: [parseAddr(INTRUDER_IP)],
      });
    } finally {
      await store.close();
    }
    const revisionBefore = await storeRevision(datastore);

    // 2. The conflict is listed and nothing is written (dry run and real run alike), exit 1.
    const dry = await imp(['--dry-run']);
    assert.equal(dry.code, 1, dry.stdout + dry.stderr);
    const dryReport = JSON.parse(dry.stdout) as Report;
    assert.equal(dryReport.refused, true);
    assert.deepEqual(
      dryReport.outcome.conflicts.map((c) => [c.kind, c.subject]),
      [['address-held', INTRUDER_IP]],
    );
    assert.match(dryReport.outcome.conflicts[0]!.detail, /intruder/);
    const refused = await imp([]);
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    const refusedReport = JSON.parse(refused.stdout) as Report;
    assert.equal(refusedReport.outcome.wroteNothing, true);
    assert.deepEqual(refusedReport.plan, dryReport.plan, 'the dry run plans what the real run does');
    assert.equal(await storeRevision(datastore), revisionBefore, 'a refused import writes nothing');

    // 3. --skip-conflicts: the dry run reports exactly what the real run then does.
    const dry2 = await imp(['--dry-run', '--skip-conflicts']);
    assert.equal(dry2.code, 0, dry2.stdout + dry2.stderr);
    const real = await imp(['--skip-conflicts']);
    assert.equal(real.code, 0, real.stdout + real.stderr);
    const d2 = JSON.parse(dry2.stdout) as Report;
    const r = JSON.parse(real.stdout) as Report;
    assert.deepEqual(r.plan, d2.plan);
    assert.deepEqual({ ...r.outcome, wroteNothing: undefined }, { ...d2.outcome, wroteNothing: undefined });
    assert.equal(d2.outcome.wroteNothing, true);
    assert.equal(r.outcome.wroteNothing, false);
    const expectedIps = CALICO_SCENARIO_EXPECTED.addresses.map((a) => a[0]);
    assert.deepEqual(
      r.plan.addresses.map((a) => a.ip),
      expectedIps,
    );
    assert.equal(r.outcome.adopted, expectedIps.length - 1);
    assert.equal(r.outcome.skipped, 1);
    assert.deepEqual(r.outcome.poolsCreated, ['default-ipv6-ippool']);

    // 4. Re-running changes nothing.
    const revisionAfter = await storeRevision(datastore);
    const again = await imp(['--skip-conflicts']);
    assert.equal(again.code, 0, again.stderr);
    const a = JSON.parse(again.stdout) as Report;
    assert.equal(a.outcome.adopted, 0);
    assert.equal(a.outcome.already, expectedIps.length - 1);
    assert.deepEqual(a.outcome.blocksWritten, []);
    assert.equal(await storeRevision(datastore), revisionAfter, 'a re-run writes nothing');

    // 5. ipam check is clean.
    const check = await cli(['ipam', 'check', '--json']);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    // Clean: no leak, no problem. The block whose Calico affinity was pendingDeletion is imported
    // without affinity, so check lists it (informational) among the blocks holding pods of nodes
    // other than their own — here node-c's job pod.
    const report = JSON.parse(check.stdout) as {
      leaks: unknown[];
      problems: unknown[];
      borrowed: { block: string; node: string | null; pods: { address: string; pod: string }[] }[];
    };
    assert.deepEqual({ leaks: report.leaks, problems: report.problems }, { leaks: [], problems: [] });
    assert.deepEqual(
      report.borrowed.map((b) => ({ block: b.block, node: b.node, pods: b.pods.map((p) => `${p.pod} ${p.address}`) })),
      [{ block: '10.244.0.192/26', node: null, pods: ['batch/job-1-abcde 10.244.0.196'] }],
    );

    // 6. Blocks kept their nodes; every address is held by the handle DEL will compute.
    const imported = new Map<string, string>(); // ip → handle
    for (const [ip, , , handle] of CALICO_SCENARIO_EXPECTED.addresses) if (ip !== INTRUDER_IP) imported.set(ip, handle);
    const s2 = await openStore(datastore);
    try {
      for (const b of CALICO_SCENARIO_EXPECTED.blocks) {
        const e = await s2.get(blockKey(parsePrefix(b.cidr)));
        assert.ok(e, `block ${b.cidr} exists`);
        // 10.244.0.64/26 was made by the intruder's assignment on node-b before the import.
        assert.equal(decodeBlock(e).affinity, b.affinity, `affinity of ${b.cidr}`);
      }
      const ipam = new ClusterIpam(s2);
      const held = async (h: string) => (await ipam.addressesOf(h))?.map((x) => formatAddr(x.addr)).sort();
      assert.deepEqual(await held(podHandle(1)), ['10.244.0.1', 'fd00:10:244::1'], 'dual-stack web-1: one handle, both addresses');
      assert.deepEqual(await held('calico-tunnel@node-a:ipip'), ['10.244.0.0']);
      assert.deepEqual(await held('calico-tunnel@node-c:vxlan-v6'), ['fd00:10:244::89']);
      assert.deepEqual(await held(INTRUDER), [INTRUDER_IP], 'the intruder keeps its address');
      for (const [ip, handle] of imported) assert.equal((await ipam.holderOfAddress(parseAddr(ip)))?.handle, handle, ip);
    } finally {
      await s2.close();
    }

    // 7. DEL through the built plugin in cluster mode, original container ids: exactly those addresses go.
    const cache = join(tmp.path, 'cache');
    for (const [n, node] of [
      [1, 'node-a'],
      [7, 'node-c'],
    ] as const) {
      const del = await runPlugin(PODIPAM_BIN, clusterCall(NET, datastore, cache, 'DEL', containerId(n), node));
      assert.equal(del.code, 0, del.stdout + del.stderr);
    }
    const freed = ['10.244.0.1', 'fd00:10:244::1', '10.244.0.131', 'fd00:10:244::83'];
    for (const ip of freed) imported.delete(ip);
    const s3 = await openStore(datastore);
    try {
      const ipam = new ClusterIpam(s3);
      assert.equal(await ipam.addressesOf(podHandle(1)), undefined);
      assert.equal(await ipam.addressesOf(podHandle(7)), undefined);
      for (const ip of freed) assert.equal(await ipam.holderOfAddress(parseAddr(ip)), undefined, `${ip} freed`);
      for (const [ip, handle] of imported) assert.equal((await ipam.holderOfAddress(parseAddr(ip)))?.handle, handle, `${ip} still held`);
    } finally {
      await s3.close();
    }

    // 8. New pods on every node never get an address still held by an imported holder.
    const given: string[] = [];
    for (const node of ['node-a', 'node-b', 'node-c']) {
      for (let i = 0; i < 4; i++) {
        const add = await runPlugin(PODIPAM_BIN, clusterCall(NET, datastore, cache, 'ADD', `new-${node}-${i}`, node));
        assert.equal(add.code, 0, add.stdout + add.stderr);
        given.push(...stdoutJson(add).ips.map((x: { address: string }) => formatAddr(parseAddr(x.address.split('/')[0] as string))));
      }
    }
    assert.equal(given.length, 24, 'dual-stack ADDs');
    for (const ip of given) assert.ok(!imported.has(ip) && ip !== INTRUDER_IP, `ADD returned held address ${ip}`);
    const final = await cli(['ipam', 'check', '--json']);
    assert.equal(final.code, 0, final.stdout + final.stderr);
  } finally {
    tmp.remove();
  }
}

async function storeRevision(datastore: string): Promise<number> {
  const s = await openStore(datastore);
  try {
    return await s.revision();
  } finally {
    await s.close();
  }
}

/** An empty etcd keyspace (podipam's and Calico's keys alike). */
async function wipeEtcd(): Promise<void> {
  const NUL = Buffer.of(0).toString('base64');
  await etcdPost(etcd.members[0]!, 'kv/deleterange', { key: NUL, range_end: NUL });
}

test('import calico from a KDD List file into a SQLite store', { timeout: 180_000 }, async () => {
  const tmp = makeTempDir('import-calico-kdd');
  try {
    const file = join(tmp.path, 'calico.json');
    writeFileSync(file, calicoKddList(calicoScenario()));
    await migrate(`sqlite:${join(tmp.path, 'podipam.db')}`, [file]);
  } finally {
    tmp.remove();
  }
});

test('import calico from a KDD List file into an etcd store', { timeout: 180_000 }, async () => {
  const tmp = makeTempDir('import-calico-kdd-etcd');
  try {
    await wipeEtcd();
    const file = join(tmp.path, 'calico.json');
    writeFileSync(file, calicoKddList(calicoScenario()));
    await migrate(etcd.url, [file]);
  } finally {
    tmp.remove();
  }
});

test("import calico --from-etcd: Calico's etcd v3 keys beside podipam's own in one etcd", { timeout: 180_000 }, async () => {
  await wipeEtcd();
  for (const { key, value } of calicoEtcdPairs(calicoScenario())) await etcdPost(etcd.members[0]!, 'kv/put', { key: b64(key), value: b64(value) });
  // Calico's etcdEndpoints form (http://HOST:PORT), as calicoctl's config writes it.
  await migrate(etcd.url, ['--from-etcd', etcd.members[0]!.clientUrl, '--etcd-prefix', '/calico']);
  // The import only read Calico's keys.
  const calico = (await etcdPost(etcd.members[0]!, 'kv/range', { key: b64('/calico/'), range_end: b64('/calico0'), count_only: true })) as { count?: string };
  assert.equal(Number(calico.count), calicoEtcdPairs(calicoScenario()).length);
});

test('import calico: usage errors exit 2 naming the flag', { timeout: 60_000 }, async () => {
  const tmp = makeTempDir('import-calico-usage');
  try {
    const db = `sqlite:${join(tmp.path, 'podipam.db')}`;
    const file = join(tmp.path, 'calico.json');
    writeFileSync(file, calicoKddList(calicoScenario()));
    const cases: [readonly string[], RegExp][] = [
      [[], /exactly one source/],
      [[file, '--from-etcd', 'etcd://127.0.0.1:1'], /exactly one source/],
      [[join(tmp.path, 'absent.json')], /cannot read .*absent\.json: ENOENT/],
      [[file, '--network', 'podipam-warm'], /--network "podipam-warm": reserved/],
      [[file, '--ifname', 'a/b'], /invalid --ifname "a\/b"/],
      [[file, '--pool-map', 'nope'], /invalid --pool-map "nope"/],
      [['--from-etcd', 'ftp://x:1'], /invalid --from-etcd/],
      [['--from-etcd', 'http://127.0.0.1:1', '--etcd-prefix', 'calico'], /invalid --etcd-prefix "calico"/],
    ];
    for (const [args, re] of cases) {
      const r = await runCli(['--datastore', db, 'import', 'calico', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, re, args.join(' '));
    }
    writeFileSync(file, '{"kind":"IPPool"}');
    const notList = await runCli(['--datastore', db, 'import', 'calico', file]);
    assert.equal(notList.code, 2);
    assert.match(notList.stderr, /calico\.json is not a Kubernetes List/);
  } finally {
    tmp.remove();
  }
});

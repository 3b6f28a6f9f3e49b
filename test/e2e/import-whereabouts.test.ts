/**
 * `podipam import whereabouts` through the built bin/podipam, on SQLite and on a real etcd: a
 * Whereabouts state in its exact `kubectl get … -o json` List format (dual-stack pods, pods of
 * several nodes — which Whereabouts does not record — and a pod written without ifname), one of
 * whose addresses another pod already holds in podipam (given by the built plugin with CNI_ARGS
 * IP=). Checks: `--dry-run` prints what the real run prints but for the would/did verbs (table
 * and JSON); the conflict refuses the import whole (exit 1, nothing written, the store revision
 * unmoved); `--skip-conflicts` writes the rest; a re-run writes nothing; `ipam check` is clean;
 * the built plugin's DEL of a migrated attachment (cluster-mode conflist named after the
 * network, the original container id and ifname) frees exactly its two addresses; new ADDs
 * never get an imported address while it is held.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterIpam } from '../../src/cluster/index.js';
import { formatAddr, parseAddr } from '../../src/ip/index.js';
import { openStore } from '../../src/store/index.js';
import { etcdPost, startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { PODIPAM_BIN, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { type WbPod, whereaboutsList } from '../helpers/whereabouts-fixture.js';
import { runCli } from './serve-harness.js';

const NET = 'wb-net';

const PODS: readonly WbPod[] = [
  // node-a's pods (Whereabouts does not say so)
  { containerId: 'c-web0', podref: 'default/web-0', ifname: 'net1', ips: ['10.60.0.2', 'fd60::2'] },
  { containerId: 'c-web1', podref: 'default/web-1', ifname: 'net1', ips: ['10.60.0.3', 'fd60::3'] },
  // node-b's
  { containerId: 'c-db0', podref: 'prod/db-0', ifname: 'net1', ips: ['10.60.0.70', 'fd60::46'] },
  // an old pod, written without ifname (eth0)
  { containerId: 'c-old', podref: 'batch/old', ips: ['10.60.0.130'] },
  // its address is held in podipam by another pod: the conflict
  { containerId: 'c-victim', podref: 'prod/victim', ifname: 'net1', ips: ['10.60.0.200', 'fd60::c8'] },
];
/** What the import with --skip-conflicts holds: all but the held address (the victim's v6 address is its own). */
const IMPORTED = PODS.flatMap((p) => p.ips).filter((ip) => ip !== '10.60.0.200');

/** The dry run's text with its verbs as the real run says them. */
function asReal(text: string): string {
  return text
    .replaceAll('would create', 'created')
    .replaceAll('would write', 'wrote')
    .replaceAll('would adopt', 'adopted')
    .replaceAll('would refuse', 'refused')
    .replaceAll('nothing would be written', 'nothing written');
}

async function revision(url: string): Promise<number> {
  const s = await openStore(url, { create: false });
  try {
    return await s.revision();
  } finally {
    await s.close();
  }
}

async function scenario(datastore: string, dir: string): Promise<void> {
  const file = join(dir, 'whereabouts.json');
  writeFileSync(
    file,
    JSON.stringify(
      whereaboutsList(
        [
          { range: '10.60.0.0/23', networkName: NET },
          { range: 'fd60::/120', networkName: NET },
        ],
        PODS,
      ),
      null,
      2,
    ),
  );
  const cli = (...args: string[]) => runCli(['--datastore', datastore, ...args]);
  const conf = (name: string, node: string) => ({
    cniVersion: '1.0.0',
    name,
    ipam: { type: 'podipam', datastore, nodeName: node, cacheDir: join(dir, `cache-${node}`) },
  });

  // podipam already serves the v4 range (same CIDR, same block size); another pod holds .200.
  assert.equal((await cli('pool', 'create', 'wb-v4', '--cidr', '10.60.0.0/23')).code, 0);
  const squat = await runPlugin(PODIPAM_BIN, {
    command: 'ADD',
    containerId: 'c-squat',
    ifname: 'eth0',
    args: 'IgnoreUnknown=1;IP=10.60.0.200;K8S_POD_NAMESPACE=other;K8S_POD_NAME=squatter',
    config: conf('other-net', 'node-x'),
  });
  assert.equal(squat.code, 0, squat.stdout + squat.stderr);

  // 1. Refused: exit 1, nothing written; the dry run says the same with "would".
  const rev0 = await revision(datastore);
  const dry = await cli('import', 'whereabouts', file, '--dry-run');
  const real = await cli('import', 'whereabouts', file);
  assert.equal(dry.code, 1, dry.stdout + dry.stderr);
  assert.equal(real.code, 1, real.stdout + real.stderr);
  assert.equal(await revision(datastore), rev0, 'a refused import wrote');
  assert.equal(asReal(dry.stdout), real.stdout);
  assert.notEqual(dry.stdout, real.stdout, 'the dry run does not say "would"');
  assert.match(real.stdout, /address-held +10\.60\.0\.200 +10\.60\.0\.200 is already held in podipam by pod other\/squatter/);
  assert.match(real.stdout, /refused: 1 conflict\(s\); nothing written/);
  assert.match(real.stderr, /import refused: 1 conflict/);
  // The plan lists every address with its holder and handle.
  assert.match(real.stdout, /fd60::2 +fd60::\/122 +pod default\/web-0 +\(unknown\) +wb-net:c-web0:net1 +c-web0/);
  assert.match(real.stdout, /10\.60\.0\.130 +10\.60\.0\.128\/26 +pod batch\/old +\(unknown\) +wb-net:c-old:eth0/);

  // 2. --skip-conflicts: the dry run prints what the real run prints but for the verbs.
  const dryTable = await cli('import', 'whereabouts', file, '--dry-run', '--skip-conflicts');
  const dryJson = await cli('import', 'whereabouts', file, '--dry-run', '--skip-conflicts', '-o', 'json');
  assert.equal(dryTable.code, 0, dryTable.stderr);
  assert.equal(dryJson.code, 0, dryJson.stderr);
  assert.equal(await revision(datastore), rev0, 'a dry run wrote');
  const realTable = await cli('import', 'whereabouts', file, '--skip-conflicts');
  assert.equal(realTable.code, 0, realTable.stderr);
  assert.equal(asReal(dryTable.stdout), realTable.stdout);
  assert.match(realTable.stdout, /adopted 8 address\(es\); 0 already held; 1 skipped for conflicts/);
  assert.match(realTable.stdout, new RegExp(`created pool\\(s\\): ${NET}-fd60---120\n`));
  const d = JSON.parse(dryJson.stdout) as {
    dryRun: boolean;
    refused: boolean;
    plan: { addresses: unknown[] };
    outcome: { adopted: number; already: number; skipped: number; poolsCreated: string[]; wroteNothing: boolean };
  };
  assert.deepEqual([d.dryRun, d.refused, d.plan.addresses.length], [true, false, 9]);
  assert.deepEqual(
    [d.outcome.adopted, d.outcome.already, d.outcome.skipped, d.outcome.poolsCreated, d.outcome.wroteNothing],
    [8, 0, 1, [`${NET}-fd60---120`], true],
  );
  // The JSON of the re-run: the same plan, everything already held.
  const rerun = await cli('import', 'whereabouts', file, '--skip-conflicts', '-o', 'json');
  const again = JSON.parse(rerun.stdout) as typeof d;
  assert.deepEqual(again.plan, d.plan);
  assert.deepEqual([again.dryRun, again.outcome.adopted, again.outcome.already, again.outcome.skipped, again.outcome.wroteNothing], [false, 0, 8, 1, true]);

  // 3. A re-run wrote nothing.
  const rev1 = await revision(datastore);
  assert.equal((await cli('import', 'whereabouts', file, '--skip-conflicts')).code, 0);
  assert.equal(await revision(datastore), rev1, 'a re-run wrote');

  // 4. ipam check is clean.
  const check = await cli('ipam', 'check', '-o', 'json');
  assert.equal(check.code, 0, check.stdout + check.stderr);
  const report = JSON.parse(check.stdout) as { leaks: unknown[]; problems: unknown[] };
  assert.deepEqual([report.leaks, report.problems], [[], []]);

  // 5. New ADDs on two nodes never get an imported address while held.
  const given: string[] = [];
  for (let i = 0; i < 12; i++) {
    const add = await runPlugin(PODIPAM_BIN, { command: 'ADD', containerId: `new-${i}`, ifname: 'eth0', config: conf(NET, i % 2 ? 'node-a' : 'node-b') });
    assert.equal(add.code, 0, add.stdout + add.stderr);
    given.push(...stdoutJson(add).ips.map((x: { address: string }) => formatAddr(parseAddr(x.address.split('/')[0]!))));
  }
  assert.equal(given.length, 24);
  assert.deepEqual(
    given.filter((ip) => IMPORTED.includes(ip)),
    [],
    'an ADD got an imported address',
  );

  // 6. The migrated pod's DEL through the built plugin frees exactly its two addresses.
  const store = await openStore(datastore, { create: false });
  try {
    const ipam = new ClusterIpam(store);
    const handle = `${NET}:c-web0:net1`;
    assert.deepEqual(
      (await ipam.addressesOf(handle))?.map((a) => formatAddr(a.addr)),
      ['10.60.0.2', 'fd60::2'],
    );
    const del = await runPlugin(PODIPAM_BIN, { command: 'DEL', containerId: 'c-web0', ifname: 'net1', config: conf(NET, 'node-a') });
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal(await ipam.addressesOf(handle), undefined);
    for (const ip of ['10.60.0.2', 'fd60::2']) assert.equal(await ipam.holderOfAddress(parseAddr(ip)), undefined, ip);
    for (const ip of IMPORTED.filter((x) => x !== '10.60.0.2' && x !== 'fd60::2')) assert.ok(await ipam.holderOfAddress(parseAddr(ip)), `${ip} was freed too`);
    assert.equal((await ipam.holderOfAddress(parseAddr('10.60.0.200')))?.pod, 'other/squatter');
    const after = await ipam.check();
    assert.deepEqual([after.leaks, after.problems], [[], []]);
  } finally {
    await store.close();
  }
}

test('import whereabouts on SQLite', { timeout: 120_000 }, async () => {
  const tmp = makeTempDir('import-wb');
  try {
    const datastore = `sqlite:${join(tmp.path, 'podipam.db')}`;
    await scenario(datastore, tmp.path);
    // Usage errors (exit 2) name what is wrong and write nothing.
    const rev = await revision(datastore);
    const file = join(tmp.path, 'whereabouts.json');
    const warm = await runCli(['--datastore', datastore, 'import', 'whereabouts', file, '--network', 'podipam-warm']);
    assert.equal(warm.code, 2, warm.stderr);
    assert.match(warm.stderr, /--network "podipam-warm"/);
    const bad = join(tmp.path, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
            kind: 'IPPool',
            metadata: { name: 'x' },
            spec: { range: '10.61.0.0/24', allocations: { '4': { podref: 'a/b' } } },
          },
        ],
      }),
    );
    const malformed = await runCli(['--datastore', datastore, 'import', 'whereabouts', bad, '--network', 'n']);
    assert.equal(malformed.code, 2, malformed.stderr);
    assert.match(malformed.stderr, /bad\.json: items\[0\] \(IPPool x\)\.spec\.allocations\["4"\]\.id is missing/);
    assert.equal(await revision(datastore), rev);
  } finally {
    tmp.remove();
  }
});

test('import whereabouts refuses an attachment holding two addresses of one family and an ifname that is no interface name', { timeout: 120_000 }, async () => {
  const tmp = makeTempDir('import-wb-refuse');
  try {
    const datastore = `sqlite:${join(tmp.path, 'podipam.db')}`;
    const file = join(tmp.path, 'wb.json');
    const doc = whereaboutsList(
      [{ range: '10.62.0.0/24', networkName: NET }],
      [
        { containerId: 'c-ok', podref: 'default/ok', ifname: 'net1', ips: ['10.62.0.2'] },
        // A leak: one attachment, two IPv4 allocations.
        { containerId: 'c-leak', podref: 'default/leaky', ifname: 'net1', ips: ['10.62.0.3', '10.62.0.40'] },
        { containerId: 'c-slash', podref: 'default/slash', ifname: 'net/1', ips: ['10.62.0.5'] },
      ],
    );
    writeFileSync(file, JSON.stringify(doc));
    const cli = (...args: string[]) => runCli(['--datastore', datastore, ...args]);
    assert.equal((await cli('pool', 'create', 'elsewhere', '--cidr', '10.63.0.0/24')).code, 0, 'the store exists');
    const rev0 = await revision(datastore);
    const refused = await cli('import', 'whereabouts', file);
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /import refused: 3 conflict/);
    assert.equal(await revision(datastore), rev0, 'a refused import wrote');
    for (const ip of ['10.62.0.3', '10.62.0.40']) {
      assert.match(
        refused.stdout,
        new RegExp(
          `invalid +${ip.replaceAll('.', '\\.')} +container "c-leak" interface "net1" has 2 IPv4 allocations, 10\\.62\\.0\\.3 \\(IPPool ${NET}-10\\.62\\.0\\.0-24\\), 10\\.62\\.0\\.40 `,
        ),
        refused.stdout,
      );
    }
    assert.match(
      refused.stdout,
      /invalid +10\.62\.0\.5 +items\[0\] \(IPPool wb-net-10\.62\.0\.0-24\)\.spec\.allocations\["5"\]\.ifname "net\/1" contains "\/", ":" or whitespace/,
      refused.stdout,
    );

    // --skip-conflicts: only the sound attachment is adopted; the leak's two addresses stay free.
    const skipped = await cli('import', 'whereabouts', file, '--skip-conflicts', '-o', 'json');
    assert.equal(skipped.code, 0, skipped.stdout + skipped.stderr);
    const out = JSON.parse(skipped.stdout) as { outcome: { adopted: number; skipped: number } };
    // skipped counts the plan's addresses left out (the leak's two); the bad ifname never became one.
    assert.deepEqual([out.outcome.adopted, out.outcome.skipped], [1, 2]);
    const store = await openStore(datastore, { create: false });
    try {
      const ipam = new ClusterIpam(store);
      assert.equal((await ipam.holderOfAddress(parseAddr('10.62.0.2')))?.pod, 'default/ok');
      for (const ip of ['10.62.0.3', '10.62.0.40', '10.62.0.5']) assert.equal(await ipam.holderOfAddress(parseAddr(ip)), undefined, ip);
    } finally {
      await store.close();
    }
  } finally {
    tmp.remove();
  }
});

let etcd: EtcdCluster;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

test('import whereabouts on etcd', { timeout: 120_000 }, async () => {
  await etcdPost(etcd.members[0]!, 'kv/deleterange', { key: Buffer.of(0).toString('base64'), range_end: Buffer.of(0).toString('base64') });
  const tmp = makeTempDir('import-wb-etcd');
  try {
    await scenario(etcd.url, tmp.path);
  } finally {
    tmp.remove();
  }
});

/**
 * The real binaries on an etcd that a production cluster would run: clients over TLS with
 * client-certificate auth, and etcd authentication enabled. The CLI creates a pool, the CNI
 * plugin (one process per call, as a runtime runs it) allocates and releases in cluster
 * mode, `podipam serve` runs on it — and none of them ever prints the password.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { clusterCall, PODIPAM_BIN, runCliSync, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { etcdTlsWith, makeTestCerts, SERVER_NAME, type TestCerts } from '../helpers/test-certs.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';
import { api, startServe } from './serve-harness.js';

const PASSWORD = 'e2e-Root-Pass-7';
let tmp: TempDir;
let certs: TestCerts;
let etcd: EtcdCluster;
const datastore = (password: string) =>
  `${etcd.url.replace('etcds://', `etcds://root:${password}@`)}?ca=${certs.caFile}&cert=${certs.clientCert}&key=${certs.clientKey}&servername=${SERVER_NAME}`;

before(async () => {
  tmp = makeTempDir('etcd-secure');
  certs = makeTestCerts(tmp.path);
  etcd = await startEtcd({
    members: 1,
    rootPassword: PASSWORD,
    tls: etcdTlsWith(certs),
  });
});
after(async () => {
  await etcd?.stop();
  tmp?.remove();
});

test('etcds with client certificates and etcd auth: CLI, CNI plugin and serve work, and never print the password', { timeout: 90_000 }, async () => {
  const url = datastore(PASSWORD);
  const created = runCliSync(url, ['pool', 'create', 'secure-v4', '--cidr', '10.93.0.0/24', '--block-size', '28']);
  assert.equal(created.code, 0, created.stderr);

  const add = await runPlugin(PODIPAM_BIN, clusterCall('secure-net', url, tmp.path, 'ADD', 'c-secure-1', 'node-s'));
  assert.equal(add.code, 0, add.stdout + add.stderr);
  const ip = stdoutJson(add).ips[0].address as string;
  assert.match(ip, /^10\.93\.0\./);
  const del = await runPlugin(PODIPAM_BIN, clusterCall('secure-net', url, tmp.path, 'DEL', 'c-secure-1', 'node-s'));
  assert.equal(del.code, 0, del.stdout + del.stderr);

  const wrong = await runPlugin(PODIPAM_BIN, clusterCall('secure-net', datastore('Not-The-Pass-3'), tmp.path, 'ADD', 'c-secure-2', 'node-s'));
  assert.notEqual(wrong.code, 0);
  const err = stdoutJson(wrong) as { code: number; msg: string; details?: string };
  assert.match(err.msg + (err.details ?? ''), /etcd refused user "root": authentication failed, invalid user ID or password/);
  assert.ok(!(wrong.stdout + wrong.stderr).includes('Not-The-Pass-3'), wrong.stdout + wrong.stderr);

  const s = await startServe({ env: { PODIPAM_DATASTORE: url } });
  try {
    assert.equal((await api(s.url, 'GET', '/healthz')).body.datastore, 'ok');
    const pools = (await api(s.url, 'GET', '/api/v1/pools')).body.items.map((p: { name: string }) => p.name);
    assert.ok(pools.includes('secure-v4'), pools.join(','));
    const whoami = await api(s.url, 'GET', '/api/v1/whoami');
    assert.match(whoami.body.datastore, /^etcds:\/\/root:\*\*\*@127\.0\.0\.1:\d+\?ca=/);
  } finally {
    await s.stop();
  }
  assert.ok(!(s.stdout() + s.stderr()).includes(PASSWORD), `serve printed the password:\n${s.stdout()}${s.stderr()}`);
  assert.match(s.stdout(), /\(datastore etcds:\/\/root:\*\*\*@/);
});

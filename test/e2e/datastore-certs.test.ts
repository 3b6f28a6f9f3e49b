/**
 * `podipam datastore certs` makes certificates a real etcd cluster runs with: three members on
 * loopback with client and peer TLS, client certificates required both ways (as deploy/'s
 * StatefulSet runs them). podipam reaches it over etcds:// with the client certificate; a
 * client without one is refused. The certificates name every member's stable DNS name.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { runCliSync } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';

let tmp: TempDir;
let etcd: EtcdCluster;
let dir: string;

before(async () => {
  tmp = makeTempDir('datastore-certs');
  dir = join(tmp.path, 'certs');
  const r = runCliSync('memory:', ['datastore', 'certs', '--dir', dir, '--namespace', 'ipam', '--days', '30']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /kubectl -n ipam create secret generic podipam-etcd-tls --from-file=ca\.crt=\S+ca\.crt --from-file=server\.crt=\S+ --from-file=server\.key=\S+ --from-file=peer\.crt=\S+ --from-file=peer\.key=\S+\n/,
  );
  assert.match(
    r.stdout,
    /kubectl -n ipam create secret generic podipam-etcd-client-tls --from-file=ca\.crt=\S+ --from-file=tls\.crt=\S+client\.crt --from-file=tls\.key=\S+client\.key\n/,
  );
  etcd = await startEtcd({
    members: 3,
    tls: {
      caFile: join(dir, 'ca.crt'),
      certFile: join(dir, 'server.crt'),
      keyFile: join(dir, 'server.key'),
      serverName: 'localhost',
      clientCertAuth: true,
      client: { certFile: join(dir, 'client.crt'), keyFile: join(dir, 'client.key') },
      peer: { certFile: join(dir, 'peer.crt'), keyFile: join(dir, 'peer.key') },
    },
  });
});
after(async () => {
  await etcd?.stop();
  tmp?.remove();
});

test('the certificates: one CA, server and peer certificates naming every member and the client Service, a client certificate without a CN', () => {
  assert.deepEqual(readdirSync(dir).sort(), ['ca.crt', 'ca.key', 'client.crt', 'client.key', 'peer.crt', 'peer.key', 'server.crt', 'server.key']);
  for (const f of ['ca.key', 'client.key', 'peer.key', 'server.key']) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f);
  const cert = (f: string) => new X509Certificate(readFileSync(join(dir, f)));
  const ca = cert('ca.crt');
  assert.equal(ca.ca, true);
  for (const f of ['server.crt', 'peer.crt', 'client.crt']) {
    assert.ok(cert(f).verify(ca.publicKey), `${f} is signed by the CA`);
    assert.equal(cert(f).ca, false);
    const days = (Date.parse(cert(f).validTo) - Date.now()) / 86_400_000;
    assert.ok(days > 29 && days <= 30.1, `${f} valid ${days} days`);
  }
  for (const f of ['server.crt', 'peer.crt']) {
    const san = cert(f).subjectAltName ?? '';
    for (const name of [
      'podipam-etcd-0.podipam-etcd-peer.ipam.svc',
      'podipam-etcd-1.podipam-etcd-peer.ipam.svc',
      'podipam-etcd-2.podipam-etcd-peer.ipam.svc',
      'podipam-etcd-2.podipam-etcd-peer.ipam.svc.cluster.local',
      '*.podipam-etcd-peer.ipam.svc.cluster.local',
      'podipam-etcd.ipam.svc',
      'podipam-etcd.ipam.svc.cluster.local',
      'localhost',
    ])
      assert.ok(san.split(', ').includes(`DNS:${name}`), `${f} names ${name}: ${san}`);
    assert.ok(san.includes('IP Address:127.0.0.1'), san);
    assert.equal(cert(f).checkHost('podipam-etcd-1.podipam-etcd-peer.ipam.svc'), 'podipam-etcd-1.podipam-etcd-peer.ipam.svc');
    assert.equal(
      cert(f).checkHost('podipam-etcd-3.podipam-etcd-peer.ipam.svc.cluster.local'),
      '*.podipam-etcd-peer.ipam.svc.cluster.local',
      'the wildcard covers a scaled-up member',
    );
    assert.equal(cert(f).checkHost('etcd.example.com'), undefined);
  }
  assert.doesNotMatch(cert('client.crt').subject, /CN=/);
  assert.match(cert('client.crt').keyUsage?.join(',') ?? '', /1\.3\.6\.1\.5\.5\.7\.3\.2/, 'clientAuth');
});

test(
  'podipam on the three-member TLS cluster with the client certificate: pool create, ipam show; without the certificate: refused',
  { timeout: 60_000 },
  () => {
    const url = `${etcd.url}?ca=${join(dir, 'ca.crt')}&cert=${join(dir, 'client.crt')}&key=${join(dir, 'client.key')}`;
    const created = runCliSync(url, ['pool', 'create', 'tls-v4', '--cidr', '10.95.0.0/24', '--block-size', '28']);
    assert.equal(created.code, 0, created.stderr);
    const show = runCliSync(url, ['ipam', 'show', '--json']);
    assert.equal(show.code, 0, show.stderr);
    assert.deepEqual(
      (JSON.parse(show.stdout) as { items: { name: string }[] }).items.map((p) => p.name),
      ['tls-v4'],
    );
    // Each member answers (the pool went through the peers' TLS to every one of them).
    for (const m of etcd.members) {
      const one = runCliSync(`etcds://${m.endpoint}?ca=${join(dir, 'ca.crt')}&cert=${join(dir, 'client.crt')}&key=${join(dir, 'client.key')}`, [
        'pool',
        'list',
        '--json',
      ]);
      assert.equal(one.code, 0, `${m.name}: ${one.stderr}`);
      assert.match(one.stdout, /"tls-v4"/, m.name);
    }
    // A backup over the same TLS, and etcd's own snapshot.
    const backup = runCliSync(url, ['datastore', 'backup', join(tmp.path, 'tls.backup'), '--json']);
    assert.equal(backup.code, 0, backup.stderr);
    assert.ok((JSON.parse(backup.stdout) as { keys: number }).keys >= 1);
    const snap = runCliSync(url, ['datastore', 'backup', join(tmp.path, 'tls.snapshot'), '--snapshot']);
    assert.equal(snap.code, 0, snap.stderr);
    const without = runCliSync(`${etcd.url}?ca=${join(dir, 'ca.crt')}`, ['ipam', 'show']);
    assert.equal(without.code, 1, without.stdout + without.stderr);
    assert.match(without.stderr, /^podipam: error: .*(certificate|handshake|TLS|tls)/im);
    // A CA it does not know the members by: refused too.
    const other = makeTempDir('datastore-certs-other');
    try {
      assert.equal(runCliSync('memory:', ['datastore', 'certs', '--dir', other.path]).code, 0);
      const wrong = runCliSync(`${etcd.url}?ca=${join(other.path, 'ca.crt')}&cert=${join(other.path, 'client.crt')}&key=${join(other.path, 'client.key')}`, [
        'ipam',
        'show',
      ]);
      assert.equal(wrong.code, 1, wrong.stdout + wrong.stderr);
    } finally {
      other.remove();
    }
  },
);

test('datastore certs: a directory that already holds certificates is refused, bad flags exit 2 naming the flag', () => {
  const again = runCliSync('memory:', ['datastore', 'certs', '--dir', dir]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /--dir \S+ already holds ca\.crt, ca\.key/);
  for (const [args, re] of [
    [['--namespace', 'Bad_NS'], /--namespace "Bad_NS" is not a DNS label/],
    [['--days', 'ten'], /invalid --days "ten"/],
    [['--members', '0'], /invalid --members "0"/],
    [['--days', '400', '--ca-days', '300'], /--ca-days 300 is shorter than --days 400/],
  ] as const) {
    const fresh = join(tmp.path, `fresh-${args[0]}`);
    const r = runCliSync('memory:', ['datastore', 'certs', '--dir', fresh, ...args]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, re);
    assert.equal(existsSync(fresh), false, 'nothing written');
  }
});

/**
 * etcds:// against a real etcd member serving clients over TLS with client-certificate auth
 * (--client-cert-auth), with certificates this test makes with openssl. The server
 * certificate names only SERVER_NAME, so every working URL here also proves `servername`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startEtcd, type EtcdCluster } from '../../../test/helpers/etcd.js';
import { etcdTlsWith, makeTestCerts, SERVER_NAME, type TestCerts } from '../../../test/helpers/test-certs.js';
import { storeConformance } from '../../../test/suites/conformance.js';
import { StoreError, StoreUrlError } from '../errors.js';
import { openStore } from '../open-store.js';

let dir = '';
let certs: TestCerts;
let etcd: EtcdCluster;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'podipam-etcd-tls-'));
  certs = makeTestCerts(dir);
  etcd = await startEtcd({
    members: 1,
    tls: etcdTlsWith(certs),
  });
});
after(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const query = (o: Record<string, string>) => `?${new URLSearchParams(o).toString().replace(/%2F/g, '/')}`;
const fullUrl = () => `${etcd.url}${query({ ca: certs.caFile, cert: certs.clientCert, key: certs.clientKey, servername: SERVER_NAME })}`;
/** No variable from the test's own environment leaks into a store under test. */
const noEnv = { env: {} };

storeConformance('etcds (TLS, client certificate)', () => openStore(fullUrl(), noEnv), { incrementsPerWorker: 25 });

describe('EtcdStore over TLS', () => {
  it('takes CA, client certificate, key and server name from PODIPAM_ETCD_*, the URL winning field by field', async () => {
    const env = {
      PODIPAM_ETCD_CA: certs.otherCaFile, // overridden by ?ca=
      PODIPAM_ETCD_CERT: certs.clientCert,
      PODIPAM_ETCD_KEY: certs.clientKey,
      PODIPAM_ETCD_SERVERNAME: SERVER_NAME,
    };
    const s = await openStore(`${etcd.url}?ca=${certs.caFile}`, { env });
    const r = await s.txn([], [{ type: 'put', key: 'tls-env/k', value: 'v' }]);
    assert.equal(r.succeeded, true);
    assert.equal((await s.get('tls-env/k'))?.value, 'v');
    await s.close();
  });

  it('a member refusing the client (no certificate) is a StoreError about TLS, at once', async () => {
    // "At once": the refusal itself, not a timeout (a timeout is StoreUnavailableError, "did not answer").
    const s = await openStore(`${etcd.url}${query({ ca: certs.caFile, servername: SERVER_NAME })}`, noEnv);
    await assert.rejects(s.get('k'), (e: unknown) => {
      assert.ok(e instanceof StoreError, String(e));
      assert.match(e.message, /TLS/);
      assert.match(e.message, /certificate/i);
      assert.doesNotMatch(e.message, /did not answer|timed? ?out/i);
      return true;
    });
    await s.close();
  });

  it('a member whose certificate the CA did not sign, or that does not match the server name, is a StoreError naming the fault', async () => {
    const client = { cert: certs.clientCert, key: certs.clientKey };
    const cases: [Record<string, string>, RegExp][] = [
      [{ ca: certs.otherCaFile, servername: SERVER_NAME, ...client }, /TLS: .*(self.signed|unable to verify|local issuer)/i],
      [{ servername: SERVER_NAME, ...client }, /TLS: .*(unable to verify|local issuer|self.signed)/i], // Node's built-in CAs
      [{ ca: certs.caFile, ...client }, /TLS: .*Hostname\/IP does not match certificate's altnames.*127\.0\.0\.1/],
      [{ ca: certs.caFile, servername: 'wrong.example', ...client }, /TLS: .*does not match certificate's altnames.*wrong\.example/],
    ];
    for (const [params, reason] of cases) {
      const s = await openStore(`${etcd.url}${query(params)}`, noEnv);
      await assert.rejects(s.txn([], [{ type: 'put', key: 'k', value: 'v' }]), (e: unknown) => {
        assert.ok(e instanceof StoreError, String(e));
        assert.match(e.message, /no etcd endpoint could be reached over TLS/);
        assert.match(e.message, reason);
        return true;
      });
      await s.close();
    }
  });

  it('bad TLS settings are a StoreUrlError naming the parameter or variable and its value', async () => {
    const junk = join(dir, 'junk.pem');
    writeFileSync(junk, 'not a certificate\n');
    const missing = join(dir, 'missing.pem');
    const cases: [string, Record<string, string>, RegExp][] = [
      [`${etcd.url}?ca=${missing}`, {}, new RegExp(`ca=${missing}: cannot read the file \\(ENOENT\\)`)],
      [etcd.url, { PODIPAM_ETCD_CA: missing }, new RegExp(`PODIPAM_ETCD_CA=${missing}: cannot read the file \\(ENOENT\\)`)],
      [`${etcd.url}?ca=${junk}`, {}, new RegExp(`ca=${junk} is not a PEM certificate`)],
      [`${etcd.url}?cert=${certs.clientCert}`, {}, /cert=.*client\.crt given without key/],
      [etcd.url, { PODIPAM_ETCD_KEY: certs.clientKey }, /PODIPAM_ETCD_KEY=.*client\.key given without cert/],
      [`${etcd.url}?cert=${certs.clientCert}&key=${junk}`, {}, new RegExp(`key=${junk} is not a PEM private key`)],
      [`${etcd.url}?cert=${certs.clientCert}&key=${certs.serverKey}`, {}, /cert=.*client\.crt and key=.*server\.key do not match/],
      [etcd.url.replace('etcds://', 'etcd://'), { PODIPAM_ETCD_CA: certs.caFile }, /PODIPAM_ETCD_CA set, but etcd:\/\/ is plain HTTP: write etcds:\/\//],
    ];
    for (const [url, env, reason] of cases) {
      await assert.rejects(openStore(url, { env }), (e: unknown) => {
        assert.ok(e instanceof StoreUrlError, `${url} ${JSON.stringify(env)}: ${String(e)}`);
        assert.match(e.message, reason);
        return true;
      });
    }
  });
});

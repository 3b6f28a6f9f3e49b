/**
 * etcd user/password authentication against a real etcd member with auth enabled (root user
 * made and `auth enable` sent through the JSON gateway; Debian ships no etcdctl), its
 * simple tokens living two seconds so expiry is seen.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { etcdPost, startEtcd, type EtcdCluster, type EtcdMember } from '../../../test/helpers/etcd.js';
import { storeConformance } from '../../../test/suites/conformance.js';
import { StoreError, StoreUrlError } from '../errors.js';
import { openStore } from '../open-store.js';
import { EtcdStore } from './etcd-store.js';

const ROOT_PASSWORD = 'root-Secret-1';
// A password with every character that means something in a URL.
const ODD_PASSWORD = 'p@ss:w/rd?#%&=,';

let etcd: EtcdCluster;
let member: EtcdMember;
const hosts = () => etcd.url.slice('etcd://'.length);
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A user holding `perm` ('READ' or 'READWRITE') on podipam's keys. */
async function addUser(name: string, password: string, perm: 'READ' | 'READWRITE'): Promise<void> {
  await etcdPost(member, 'auth/role/add', { name });
  await etcdPost(member, 'auth/role/grant', { name, perm: { permType: perm, key: b64('/podipam/'), range_end: b64('/podipam0') } });
  await etcdPost(member, 'auth/user/add', { name, password });
  await etcdPost(member, 'auth/user/grant', { user: name, role: name });
}

before(async () => {
  etcd = await startEtcd({ members: 1, rootPassword: ROOT_PASSWORD, extraArgs: ['--auth-token-ttl', '2'] });
  member = etcd.members[0] as EtcdMember;
  await addUser('podipam', ODD_PASSWORD, 'READWRITE');
  await addUser('reader', 'reader-pw', 'READ');
});
after(() => etcd?.stop());

storeConformance('etcd with auth', () => openStore(`etcd://root:${encodeURIComponent(ROOT_PASSWORD)}@${hosts()}`, { env: {} }), { incrementsPerWorker: 10 });

describe('EtcdStore with etcd auth', () => {
  it('a user with a percent-encoded password in the URL reads and writes podipam keys', async () => {
    const s = await openStore(`etcd://podipam:${encodeURIComponent(ODD_PASSWORD)}@${hosts()}`, { env: {} });
    assert.equal(s.url, `etcd://podipam:***@${hosts()}`);
    assert.equal((await s.txn([], [{ type: 'put', key: 'auth/k', value: 'v' }])).succeeded, true);
    assert.equal((await s.get('auth/k'))?.value, 'v');
    await s.close();
  });

  it('takes the user and password from PODIPAM_ETCD_USERNAME and PODIPAM_ETCD_PASSWORD', async () => {
    const s = await openStore(etcd.url, { env: { PODIPAM_ETCD_USERNAME: 'podipam', PODIPAM_ETCD_PASSWORD: ODD_PASSWORD } });
    assert.equal((await s.get('auth/k'))?.value, 'v');
    await s.close();
    await assert.rejects(
      openStore(etcd.url, { env: { PODIPAM_ETCD_USERNAME: 'podipam' } }),
      (e: unknown) => e instanceof StoreUrlError && /PODIPAM_ETCD_USERNAME=podipam set without PODIPAM_ETCD_PASSWORD/.test(e.message),
    );
    await assert.rejects(
      openStore(etcd.url, { env: { PODIPAM_ETCD_PASSWORD: 'x' } }),
      (e: unknown) => e instanceof StoreUrlError && /PODIPAM_ETCD_PASSWORD set without PODIPAM_ETCD_USERNAME/.test(e.message),
    );
  });

  it('a wrong password is a StoreError naming the user, never the password', async () => {
    for (const url of [`etcd://podipam:wrong-Pass-9@${hosts()}`, `etcd://nobody:wrong-Pass-9@${hosts()}`]) {
      const s = await openStore(url, { env: {} });
      await assert.rejects(s.get('auth/k'), (e: unknown) => {
        assert.ok(e instanceof StoreError, String(e));
        assert.match(e.message, /etcd refused user "(podipam|nobody)": authentication failed, invalid user ID or password/);
        assert.ok(e.message.includes(':***@'), e.message);
        assert.ok(!e.message.includes('wrong-Pass-9'), e.message);
        return true;
      });
      await s.close();
    }
  });

  it('no credentials is a StoreError saying the cluster has authentication enabled and how to give them', async () => {
    const s = await openStore(etcd.url, { env: {} });
    await assert.rejects(s.get('auth/k'), (e: unknown) => {
      assert.ok(e instanceof StoreError, String(e));
      assert.match(e.message, /user name is empty/);
      assert.match(e.message, /authentication enabled: give USER:PASSWORD@ in the URL or PODIPAM_ETCD_USERNAME and PODIPAM_ETCD_PASSWORD/);
      return true;
    });
    await s.close();
  });

  it('a user without write permission gets a StoreError saying permission denied', async () => {
    const s = await openStore(`etcd://reader:reader-pw@${hosts()}`, { env: {} });
    assert.equal((await s.get('auth/k'))?.value, 'v');
    await assert.rejects(
      s.txn([], [{ type: 'put', key: 'auth/k', value: 'w' }]),
      (e: unknown) => e instanceof StoreError && /permission denied/.test(e.message),
    );
    await s.close();
  });

  it('authenticates once for concurrent calls, and again after the token expired', { timeout: 20_000 }, async () => {
    const s = await openStore(`etcd://podipam:${encodeURIComponent(ODD_PASSWORD)}@${hosts()}`, { env: {} });
    const values = await Promise.all(Array.from({ length: 5 }, () => s.get('auth/k')));
    assert.ok(values.every((v) => v?.value === 'v'));
    assert.equal(s.roundTrips, 6, 'one authenticate and five ranges');
    await new Promise((r) => setTimeout(r, 4500)); // the 2 s token TTL passes (etcd checks expiry each second)
    assert.equal((await s.get('auth/k'))?.value, 'v');
    assert.equal(s.roundTrips, 9, 'a refused range, an authenticate, the range again');
    await s.close();
  });
});

describe('EtcdStore snapshots with etcd auth', () => {
  it('a snapshot streamed after the token expired authenticates again and is written', { timeout: 20_000 }, async () => {
    const s = await openStore(`etcd://root:${encodeURIComponent(ROOT_PASSWORD)}@${hosts()}`, { env: {} });
    assert.ok(s instanceof EtcdStore);
    await s.revision(); // authenticated now
    await new Promise((r) => setTimeout(r, 4500)); // the 2 s token TTL passes
    const dir = mkdtempSync(join(tmpdir(), 'podipam-auth-snap-'));
    try {
      const r = await s.saveSnapshot(join(dir, 'snap.db'));
      assert.ok(r.bytes > 0 && statSync(join(dir, 'snap.db')).size === r.bytes);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await s.close();
    }
  });
});

describe('EtcdStore watches with etcd auth', () => {
  const key = 'auth/watched';
  const collect = async (feed: AsyncIterable<{ key: string; value: string }[]>, want: number) => {
    const got: string[] = [];
    for await (const batch of feed) {
      for (const e of batch) got.push(`${e.key}=${e.value}`);
      if (got.length >= want) break;
    }
    return got;
  };

  it('a watch opened after the token expired authenticates again and delivers', { timeout: 20_000 }, async () => {
    const s = await openStore(`etcd://podipam:${encodeURIComponent(ODD_PASSWORD)}@${hosts()}`, { env: {} });
    const from = (await s.revision()) + 1;
    await new Promise((r) => setTimeout(r, 4500)); // the 2 s token TTL passes
    const got = collect(s.watch('auth/', from), 1);
    await s.txn([], [{ type: 'put', key, value: 'after-expiry' }]);
    assert.deepEqual(await got, [`${key}=after-expiry`]);
    await s.close();
  });

  it('a watch that reconnects after a restart (which forgets every token) delivers what followed', { timeout: 30_000 }, async () => {
    const s = await openStore(`etcd://podipam:${encodeURIComponent(ODD_PASSWORD)}@${hosts()}`, { env: {} });
    const from = (await s.revision()) + 1;
    const got = collect(s.watch('auth/', from), 2);
    await s.txn([], [{ type: 'put', key, value: 'before-restart' }]);
    await member.kill();
    await member.restart();
    // Written through another store: `s` itself must not renew its token before its watch reconnects.
    const w = await openStore(`etcd://podipam:${encodeURIComponent(ODD_PASSWORD)}@${hosts()}`, { env: {} });
    await w.txn([], [{ type: 'put', key, value: 'after-restart' }]);
    assert.deepEqual(await got, [`${key}=before-restart`, `${key}=after-restart`]);
    await Promise.all([s.close(), w.close()]);
  });

  it('without credentials a watch fails with the hint to give them, once, not in a loop', { timeout: 20_000 }, async () => {
    const s = await openStore(`etcd://${hosts()}`, { env: {} });
    await assert.rejects(
      collect(s.watch('auth/', 1), 1),
      (e: unknown) => e instanceof StoreError && /authentication enabled: give USER:PASSWORD@/.test(e.message),
    );
    await s.close();
  });
});

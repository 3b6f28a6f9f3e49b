/**
 * The pod routes of a running `bin/podipam serve` (real HTTP, real SQLite): a pod's handles by
 * namespace/name and by name alone, who holds an address, and the refusals — 400 naming the
 * field for a malformed namespace, name or address, 404 for a pod or address nobody holds,
 * 401 without the read token.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { openStore } from '../../src/store/index.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, startServe } from './serve-harness.js';

test('serve api: pods by name, holders of addresses, 400 naming the field, 404, 401', async () => {
  const d = makeTempDir('serve-pods');
  const read = 'read-0123456789abcdef';
  const admin = 'admin-0123456789abcdef';
  writeFileSync(join(d.path, 'tokens'), `read=${read}\nadmin=${admin}\n`, { mode: 0o600 });
  const s = await startServe({ args: ['--token-file', join(d.path, 'tokens'), '--no-controller', '--no-default-pools'] });
  try {
    assert.equal((await api(s.url, 'POST', '/api/v1/pools', { name: 'p', cidr: '10.61.0.0/24', blockSize: 28 }, admin)).status, 201);
    const store = await openStore(s.datastore);
    try {
      await new ClusterIpam(store).assign({
        node: 'n1',
        handle: 'net:c1:eth0',
        attrs: { namespace: 'shop', pod: 'web-0', podUid: 'u1', network: 'net', containerId: 'c1', ifname: 'eth0' },
        auto: 'each-family',
      });
    } finally {
      await store.close();
    }
    const byPod = await api(s.url, 'GET', '/api/v1/pods/shop/web-0', undefined, read);
    assert.equal(byPod.status, 200, JSON.stringify(byPod.body));
    assert.equal(byPod.body.pod, 'shop/web-0');
    assert.equal(byPod.body.items.length, 1);
    assert.equal(byPod.body.items[0].handle, 'net:c1:eth0');
    const held = byPod.body.items[0].addresses as { ip: string; block: string; pool: string }[];
    assert.equal(held.length, 1, JSON.stringify(byPod.body));
    assert.equal(held[0]!.pool, 'p');

    const byName = await api(s.url, 'GET', '/api/v1/pods?name=web-0', undefined, read);
    assert.equal(byName.status, 200);
    assert.equal(byName.body.items.length, 1);

    const ip = held[0]!.ip;
    const holder = await api(s.url, 'GET', `/api/v1/addresses/${ip}`, undefined, read);
    assert.equal(holder.status, 200, JSON.stringify(holder.body));
    assert.equal(holder.body.handle, 'net:c1:eth0');

    const bad = async (path: string, field: string) => {
      const r = await api(s.url, 'GET', path, undefined, read);
      assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.field, field, JSON.stringify(r.body));
      return r.body.error.message as string;
    };
    assert.match(await bad('/api/v1/pods/Shop/web-0', 'namespace'), /"Shop"/);
    assert.match(await bad('/api/v1/pods/shop/web_0', 'name'), /"web_0"/);
    assert.match(await bad('/api/v1/pods', 'name'), /undefined|got/);
    assert.match(await bad('/api/v1/pods?name=a..b-', 'name'), /a\.\.b-/);
    assert.match(await bad('/api/v1/addresses/10.61.0.300', 'ip'), /IPv4 or IPv6/);

    const none = await api(s.url, 'GET', '/api/v1/pods/shop/web-1', undefined, read);
    assert.equal(none.status, 404);
    assert.match(none.body.error.message, /shop\/web-1 holds no address/);
    assert.equal((await api(s.url, 'GET', '/api/v1/addresses/10.61.0.250', undefined, read)).status, 404);
    assert.equal((await api(s.url, 'GET', '/api/v1/pods/shop/web-0', undefined, undefined)).status, 401);
  } finally {
    await s.stop();
    d.remove();
  }
});

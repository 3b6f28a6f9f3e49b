/**
 * The ip-set routes of a running `bin/podipam serve` (real HTTP, real SQLite): create (admin
 * token only), list, show with the holding pod, validation (400 naming the field, 404 for an
 * unknown pool, 409 for a conflict), delete refused while an address is held.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { openStore } from '../../src/store/index.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, startServe } from './serve-harness.js';

test('serve api: ip-sets CRUD, validation, a held address refuses delete', async () => {
  const d = makeTempDir('serve-ipsets');
  const read = 'read-0123456789abcdef';
  const admin = 'admin-0123456789abcdef';
  writeFileSync(join(d.path, 'tokens'), `read=${read}\nadmin=${admin}\n`, { mode: 0o600 });
  const s = await startServe({ args: ['--token-file', join(d.path, 'tokens'), '--no-controller'] });
  try {
    assert.equal((await api(s.url, 'POST', '/api/v1/pools', { name: 'small', cidr: '10.60.0.0/24', blockSize: 28 }, admin)).status, 201);
    const body = { name: 'web', pool: 'small', addresses: ['10.60.0.5-10.60.0.7', '10.60.0.20'] };
    const denied = await api(s.url, 'POST', '/api/v1/ipsets', body, read);
    assert.equal(denied.status, 403);
    const created = await api(s.url, 'POST', '/api/v1/ipsets', body, admin);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.ranges, ['10.60.0.5-10.60.0.7', '10.60.0.20']);
    assert.equal(created.body.size, 4);
    const counted = await api(s.url, 'POST', '/api/v1/ipsets', { name: 'db', pool: 'small', count: 2 }, admin);
    assert.equal(counted.status, 201, JSON.stringify(counted.body));
    assert.deepEqual(counted.body.ranges, ['10.60.0.2-10.60.0.3']);

    const bad = async (b: unknown, status: number, code: string, field?: string) => {
      const r = await api(s.url, 'POST', '/api/v1/ipsets', b, admin);
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body.error.code, code, JSON.stringify(r.body));
      if (field) assert.equal(r.body.error.field, field, JSON.stringify(r.body));
      return r.body.error.message as string;
    };
    await bad({ name: 'x', pool: 'small', addresses: ['10.60.0.9'], count: 1 }, 400, 'invalid_field', 'addresses');
    assert.match(await bad({ name: 'x', pool: 'small', addresses: ['10.60.1.9'] }, 400, 'invalid_field', 'addresses'), /not inside pool "small"/);
    assert.match(await bad({ name: 'x', pool: 'small', addresses: ['nope'] }, 400, 'invalid_field', 'addresses'), /invalid ip-set address "nope"/);
    await bad({ name: 'x', pool: 'small', count: 0 }, 400, 'invalid_field', 'count');
    await bad({ name: 'X', pool: 'small', count: 1 }, 400, 'invalid_field', 'name');
    assert.match(await bad({ name: 'x', pool: 'gone', count: 1 }, 404, 'not_found'), /pool "gone" does not exist/);
    assert.match(await bad({ name: 'x', pool: 'small', addresses: ['10.60.0.6'] }, 409, 'ip_set_conflict'), /10\.60\.0\.6 belongs to ip-set "web"/);

    const taken = await api(s.url, 'POST', '/api/v1/allocations', { node: 'n1', handle: 'h-direct', ips: ['10.60.0.6'] }, admin);
    assert.equal(taken.status, 409);
    assert.match(taken.body.error.message, /it belongs to ip-set "web"/);

    // A pod of the set holds an address (assigned on the same SQLite file).
    const store = await openStore(s.datastore);
    try {
      const c = new ClusterIpam(store);
      await c.assign({ node: 'n1', handle: 'h1', attrs: { namespace: 'shop', pod: 'web-0' }, auto: 'each-family', ipSet: 'web' });
      const list = await api(s.url, 'GET', '/api/v1/ipsets', undefined, read);
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.items.map((x: { name: string; held: number }) => `${x.name} ${x.held}`),
        ['db 0', 'web 1'],
      );
      const shown = await api(s.url, 'GET', '/api/v1/ipsets/web', undefined, read);
      assert.deepEqual(shown.body.addresses[0], { address: '10.60.0.5', handle: 'h1', namespace: 'shop', pod: 'web-0', node: 'n1' });
      assert.equal((await api(s.url, 'GET', '/api/v1/ipsets/none', undefined, read)).status, 404);
      assert.equal((await api(s.url, 'DELETE', '/api/v1/ipsets/web', undefined, read)).status, 403);
      const inUse = await api(s.url, 'DELETE', '/api/v1/ipsets/web', undefined, admin);
      assert.equal(inUse.status, 409);
      assert.equal(inUse.body.error.code, 'ip_set_in_use');
      assert.match(inUse.body.error.message, /10\.60\.0\.5 \(pod shop\/web-0, handle "h1"\)/);
      await c.releaseHandle('h1');
    } finally {
      await store.close();
    }
    const deleted = await api(s.url, 'DELETE', '/api/v1/ipsets/web', undefined, admin);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.deepEqual(deleted.body, { name: 'web', deleted: true });
    assert.equal((await api(s.url, 'GET', '/api/v1/ipsets/web', undefined, read)).status, 404);
    assert.equal((await api(s.url, 'DELETE', '/api/v1/ipsets/web', undefined, admin)).status, 404);
  } finally {
    await s.stop();
    d.remove();
  }
});

/**
 * The pool-change routes of a running `bin/podipam serve` (real HTTP, real SQLite): resize
 * (grow; a shrink refused with 409 naming the addresses), drain / undrain answering what the
 * pool holds, GET …/held, PATCH blockSize (former sizes reported), and validation: 400 naming
 * the field, 404 for an unknown pool, 403 for the read token.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { CONFIG_KEY, agentViewKey, encodeAgentView } from '../../src/cluster/records/index.js';
import { formatAddr } from '../../src/ip/index.js';
import { makeTempDir } from '../helpers/tmp.js';
import { agentView } from '../helpers/agent-view.js';
import { api, apiAs, startServe } from './serve-harness.js';

test('serve api: pool resize, drain, undrain, held, PATCH blockSize; 400/404/409 as the other routes', async () => {
  const d = makeTempDir('serve-pool-live');
  const read = 'read-0123456789abcdef';
  const admin = 'admin-0123456789abcdef';
  writeFileSync(join(d.path, 'tokens'), `read=${read}\nadmin=${admin}\n`, { mode: 0o600 });
  const s = await startServe({ args: ['--token-file', join(d.path, 'tokens'), '--no-controller'] });
  try {
    const { ok, bad } = apiAs(s.url, admin);
    await ok('POST', '/api/v1/pools', { name: 'p', cidr: '10.62.0.0/25', blockSize: 26 }, 201);
    await ok('POST', '/api/v1/allocations', { node: 'n1', handle: 'h-out', ips: ['10.62.0.70'] }, 201);
    assert.equal((await api(s.url, 'POST', '/api/v1/pools/p/resize', { cidr: '10.62.0.0/24' }, read)).status, 403);

    assert.deepEqual(await ok('POST', '/api/v1/pools/p/resize', { cidr: '10.62.0.0/24' }), {
      name: 'p',
      cidr: '10.62.0.0/24',
      resized: 'grow',
      removedBlocks: 0,
    });
    assert.match(
      await bad('POST', '/api/v1/pools/p/resize', { cidr: '10.62.0.0/26' }, 409, 'pool_change_refused'),
      /1 address is allocated outside cidr 10\.62\.0\.0\/26: 10\.62\.0\.70/,
    );
    assert.match(await bad('POST', '/api/v1/pools/p/resize', { cidr: '10.62.0.1/24' }, 400, 'invalid_field', 'cidr'), /invalid pool cidr "10\.62\.0\.1\/24"/);
    await bad('POST', '/api/v1/pools/p/resize', {}, 400, 'invalid_field', 'cidr');
    await bad('POST', '/api/v1/pools/p/resize', { cidr: '10.62.0.0/24', x: 1 }, 400, 'invalid_field', 'x');
    await bad('POST', '/api/v1/pools/none/resize', { cidr: '10.63.0.0/24' }, 404, 'not_found');

    const patched = await ok('PATCH', '/api/v1/pools/p', { blockSize: 27 });
    assert.deepEqual([patched.blockSize, patched.formerBlockSizes], [27, [26]]);
    assert.match(await bad('PATCH', '/api/v1/pools/p', { blockSize: 22 }, 400, 'invalid_field', 'blockSize'), /blockSize' 22/);
    await bad('PATCH', '/api/v1/pools/p', {}, 400, 'invalid_field');
    assert.equal((await ok('PATCH', '/api/v1/pools/p', { reuseAfter: '45s' })).reuseAfter, '45s');
    assert.match(await bad('PATCH', '/api/v1/pools/p', { reuseAfter: 'soon' }, 400, 'invalid_field', 'reuseAfter'), /invalid pool reuseAfter "soon"/);
    assert.match(await bad('PATCH', '/api/v1/pools/p', { reuseAfter: '3h' }, 400, 'invalid_field', 'reuseAfter'), /at most 1h/);
    await bad('PATCH', '/api/v1/pools/p', { reuseAfter: 30 }, 400, 'invalid_field', 'reuseAfter');
    await bad('POST', '/api/v1/pools', { name: 'r', cidr: '10.64.0.0/24', reuseAfter: '-1s' }, 400, 'invalid_field', 'reuseAfter');
    const shown = await ok('GET', '/api/v1/pools/p', undefined);
    assert.deepEqual([shown.blockSize, shown.formerBlockSizes, shown.draining, shown.reuseAfter], [27, [26], false, '45s']);
    assert.equal((await ok('PATCH', '/api/v1/pools/p', { reuseAfter: '0' })).reuseAfter, 'off');

    const drained = await ok('POST', '/api/v1/pools/p/drain', undefined);
    assert.deepEqual(
      [drained.state, drained.allocated, drained.nodes],
      ['draining', 1, [{ node: 'n1', pods: [{ handle: 'h-out', addresses: ['10.62.0.70'] }] }]],
    );
    assert.equal((await api(s.url, 'POST', '/api/v1/allocations', { node: 'n1', handle: 'h2', pools: ['p'] }, admin)).status, 409);
    assert.equal((await api(s.url, 'GET', '/api/v1/pools/p/held', undefined, read)).body.allocated, 1);
    await bad('GET', '/api/v1/pools/none/held', undefined, 404, 'not_found');
    await bad('POST', '/api/v1/pools/none/drain', undefined, 404, 'not_found');
    await ok('POST', '/api/v1/release', { handle: 'h-out' });
    assert.equal((await ok('GET', '/api/v1/pools/p/held', undefined)).allocated, 0);
    assert.equal((await ok('POST', '/api/v1/pools/p/undrain', undefined)).state, 'enabled');
    await ok('POST', '/api/v1/allocations', { node: 'n1', handle: 'h3', pools: ['p'] }, 201);

    // A node agent's warm pool holds idle addresses of pool w: the drain waits for its answer
    // (its holder view naming the drain's config generation) and says how that ended.
    await ok('POST', '/api/v1/pools', { name: 'w', cidr: '10.65.0.0/24', blockSize: 28 }, 201);
    const store = await openStore(s.datastore);
    try {
      const warmAddrs = (await new ClusterIpam(store).assign({ node: 'n2', handle: 'podipam-warm:n2:r1', auto: { 4: 2 }, pools: ['w'] })).map((a) =>
        formatAddr(a.addr),
      );
      await bad('POST', '/api/v1/pools/w/drain?warmTimeoutMs=soon', undefined, 400, 'invalid_field', 'warmTimeoutMs');
      assert.equal((await ok('GET', '/api/v1/pools/w', undefined)).draining, false, 'a bad parameter writes nothing');
      const t0 = performance.now();
      const silent = await ok('POST', '/api/v1/pools/w/drain?warmTimeoutMs=300', undefined);
      assert.ok(performance.now() - t0 >= 250, 'it waited');
      assert.deepEqual(silent.agents, { answered: [], silent: [{ node: 'n2', idle: warmAddrs }], unreadableBlocks: [] });
      // Now play the agent: once the drain has committed, a view naming its generation.
      const before = (await store.get(CONFIG_KEY))!.rev;
      const answered = ok('POST', '/api/v1/pools/w/drain?warmTimeoutMs=10000', undefined);
      for (let i = 0; ; i++) {
        const gen = (await store.get(CONFIG_KEY))!.rev;
        if (gen > before) {
          const view = agentView('n2', new Date().toISOString(), { configRev: gen });
          await store.txn([], [{ type: 'put', key: agentViewKey('n2'), value: encodeAgentView(view) }]);
          break;
        }
        assert.ok(i < 500, 'the drain did not commit within 10 s');
        await new Promise((r) => setTimeout(r, 20));
      }
      const a = (await answered).agents;
      assert.deepEqual([a.silent, a.answered.map((x: { node: string }) => x.node)], [[], ['n2']], JSON.stringify(a));
    } finally {
      await store.close();
    }
  } finally {
    await s.stop();
    d.remove();
  }
});

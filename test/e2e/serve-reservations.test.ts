/**
 * The reservation routes of a running `bin/podipam serve` (real HTTP, real SQLite): PUT creates
 * or replaces a reservation and waits (bounded by ?warmTimeoutMs) for the node agents whose warm
 * pools hold idle addresses inside it, naming a silent one with those addresses; GET lists;
 * DELETE deletes (404 the second time); a reserved address is refused to a new allocation; bad
 * input is a 400 naming the field and writes nothing; the read token gets 403.
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

test('serve api: reservations PUT (waiting for the warm agents), GET, DELETE; 400 naming the field, 403, 404, 409', async () => {
  const d = makeTempDir('serve-reservations');
  const read = 'read-0123456789abcdef';
  const admin = 'admin-0123456789abcdef';
  writeFileSync(join(d.path, 'tokens'), `read=${read}\nadmin=${admin}\n`, { mode: 0o600 });
  const s = await startServe({ args: ['--token-file', join(d.path, 'tokens'), '--no-controller'] });
  const store = await openStore(s.datastore);
  try {
    const { ok, bad } = apiAs(s.url, admin);
    await ok('POST', '/api/v1/pools', { name: 'w', cidr: '10.66.0.0/24', blockSize: 28 }, 201);
    // A node agent's warm pool holds two idle addresses of the pool.
    const warm = (await new ClusterIpam(store).assign({ node: 'n2', handle: 'podipam-warm:n2:r1', auto: { 4: 2 }, pools: ['w'] })).map((a) =>
      formatAddr(a.addr),
    );
    const inside = warm[0]!;
    // An address of another block of the pool, reserved beside it.
    const other = `10.66.0.${((Number(inside.split('.')[3]) & 0xf0) ^ 0x80) + 5}`;

    // Bad input: 400 naming the field and the value, nothing written.
    await bad('PUT', '/api/v1/reservations/r1', {}, 400, 'invalid_field', 'cidrs');
    assert.match(await bad('PUT', '/api/v1/reservations/r1', { cidrs: [] }, 400, 'invalid_field', 'cidrs'), /at least 1/);
    assert.match(await bad('PUT', '/api/v1/reservations/r1', { cidrs: ['10.66.0.300'] }, 400, 'invalid_field', 'cidrs'), /"10\.66\.0\.300"/);
    const many = Array.from({ length: 257 }, (_, i) => `10.67.${i >> 8}.${i & 255}`);
    assert.match(await bad('PUT', '/api/v1/reservations/r1', { cidrs: many }, 400, 'invalid_field', 'cidrs'), /at most 256 items: got 257/);
    await bad('PUT', '/api/v1/reservations/Bad_Name', { cidrs: [inside] }, 400, 'invalid_field', 'name');
    await bad('PUT', '/api/v1/reservations/r1?warmTimeoutMs=soon', { cidrs: [inside] }, 400, 'invalid_field', 'warmTimeoutMs');
    await bad('PUT', '/api/v1/reservations/r1', { cidrs: [inside], color: 'red' }, 400, 'invalid_field', 'color');
    assert.equal((await api(s.url, 'PUT', '/api/v1/reservations/r1', { cidrs: [inside] }, read)).status, 403);
    assert.deepEqual((await ok('GET', '/api/v1/reservations', undefined)).items, [], 'no bad request wrote anything');

    // The agent does not answer: the reservation is made, and the answer names the node and the
    // idle address inside it that it may still hand out.
    const t0 = performance.now();
    const silent = await ok('PUT', '/api/v1/reservations/r1?warmTimeoutMs=300', { cidrs: [inside, other] });
    assert.ok(performance.now() - t0 >= 250, 'it waited');
    assert.deepEqual([silent.name, silent.cidrs], ['r1', [`${inside}/32`, `${other}/32`]]);
    assert.deepEqual(silent.agents, { answered: [], silent: [{ node: 'n2', idle: [inside] }], unreadableBlocks: [] }, JSON.stringify(silent.agents));
    assert.deepEqual((await api(s.url, 'GET', '/api/v1/reservations', undefined, read)).body.items, [{ name: 'r1', cidrs: [`${inside}/32`, `${other}/32`] }]);
    assert.match(await bad('POST', '/api/v1/allocations', { node: 'n1', handle: 'h-r', ips: [other] }, 409, 'address_unavailable'), /reserv/);

    // Replaced, with the agent answering once the change has committed.
    const before = (await store.get(CONFIG_KEY))!.rev;
    const answered = ok('PUT', '/api/v1/reservations/r1?warmTimeoutMs=10000', { cidrs: [inside] });
    for (let i = 0; ; i++) {
      const gen = (await store.get(CONFIG_KEY))!.rev;
      if (gen > before) {
        await store.txn([], [{ type: 'put', key: agentViewKey('n2'), value: encodeAgentView(agentView('n2', new Date().toISOString(), { configRev: gen })) }]);
        break;
      }
      assert.ok(i < 500, 'the reservation did not commit within 10 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const a = (await answered).agents;
    assert.deepEqual([a.silent, a.answered.map((x: { node: string }) => x.node)], [[], ['n2']], JSON.stringify(a));
    assert.deepEqual((await ok('GET', '/api/v1/reservations', undefined)).items, [{ name: 'r1', cidrs: [`${inside}/32`] }]);

    assert.deepEqual(await ok('DELETE', '/api/v1/reservations/r1', undefined), { name: 'r1', deleted: true });
    await bad('DELETE', '/api/v1/reservations/r1', undefined, 404, 'not_found');
    assert.deepEqual((await ok('GET', '/api/v1/reservations', undefined)).items, []);
    await ok('POST', '/api/v1/allocations', { node: 'n1', handle: 'h-r', ips: [other] }, 201);
  } finally {
    await store.close();
    await s.stop();
    d.remove();
  }
});

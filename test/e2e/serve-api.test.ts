/**
 * The HTTP API of a running `bin/podipam serve` (real HTTP on a loopback port, real SQLite in
 * a temp dir): CRUD, validation errors, check + release, auth, metrics.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatAddr, parseAddr, parsePrefix } from '../../src/ip/index.js';
import { openStore } from '../../src/store/index.js';
import { handleKey, nodeKey } from './serve-keys.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, runCli, startServe, waitFor, type ServeProcess } from './serve-harness.js';

let s: ServeProcess;
before(async () => {
  s = await startServe();
});
after(async () => {
  await s?.stop();
});

test('serve api: default pools exist and pools CRUD works', async () => {
  const list = await api(s.url, 'GET', '/api/v1/pools');
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.items.map((p: any) => p.name),
    ['default-ipv4', 'default-ipv6'],
  );

  const created = await api(s.url, 'POST', '/api/v1/pools', { name: 'extra', cidr: '10.96.0.0/20', blockSize: 28 });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const got = await api(s.url, 'GET', '/api/v1/pools/extra');
  assert.equal(got.status, 200);
  assert.equal(got.body.cidr, '10.96.0.0/20');
  assert.equal(got.body.blockSize, 28);
  assert.equal(got.body.capacity, 256 * 13, 'usable addresses: 256 blocks of /28, each less its network, gateway and broadcast addresses');
  assert.equal(got.body.blockSlots, 256);
  assert.equal(got.body.allocated, 0);

  const dup = await api(s.url, 'POST', '/api/v1/pools', { name: 'extra', cidr: '10.97.0.0/20' });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.error.code, 'pool_conflict');
  const overlap = await api(s.url, 'POST', '/api/v1/pools', { name: 'other', cidr: '10.96.8.0/24' });
  assert.equal(overlap.status, 409);
  assert.match(overlap.body.error.message, /overlaps pool "extra"/);

  const off = await api(s.url, 'PATCH', '/api/v1/pools/extra', { disabled: true });
  assert.equal(off.status, 200);
  assert.equal((await api(s.url, 'GET', '/api/v1/pools/extra')).body.disabled, true);

  assert.equal((await api(s.url, 'DELETE', '/api/v1/pools/extra')).status, 200);
  const gone = await api(s.url, 'GET', '/api/v1/pools/extra');
  assert.equal(gone.status, 404);
  assert.equal(gone.body.error.code, 'not_found');
  assert.equal((await api(s.url, 'DELETE', '/api/v1/pools/extra')).status, 404);
});

test('serve api: bad bodies get 400 naming the field and the value', async () => {
  const cases: [unknown, string, RegExp][] = [
    [{ name: 'Bad_Name', cidr: '10.1.0.0/16' }, 'name', /"Bad_Name"/],
    [{ cidr: '10.1.0.0/16' }, 'name', /required/],
    [{ name: 'p1', cidr: 'ten.one/16' }, 'cidr', /"ten\.one\/16"/],
    [{ name: 'p1', cidr: '10.1.0.1/16' }, 'cidr', /host bits/],
    [{ name: 'p1', cidr: '10.1.0.0/16', blockSize: 'x' }, 'blockSize', /"x"/],
    [{ name: 'p1', cidr: '10.1.0.0/16', blockSize: 12 }, 'blockSize', /12/],
    [{ name: 'p1', cidr: '10.1.0.0/16', blockSize: 31 }, 'blockSize', /'blockSize' 31 .*leaves no usable address/],
    [{ name: 'p1', cidr: 'fd00:1::/64', blockSize: 128 }, 'blockSize', /'blockSize' 128 .*leaves no usable address/],
    [{ name: 'p1', cidr: '10.1.0.0/16', disabled: 'yes' }, 'disabled', /"yes"/],
    [{ name: 'p1', cidr: '10.1.0.0/16', blocksize: 26 }, 'blocksize', /unknown field "blocksize"/],
  ];
  for (const [body, field, message] of cases) {
    const r = await api(s.url, 'POST', '/api/v1/pools', body);
    assert.equal(r.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.field, field, JSON.stringify(r.body));
    assert.match(r.body.error.message, message);
  }
  const alloc: [unknown, string][] = [
    [{ containerId: 'c1' }, 'node'],
    [{ node: 'n1' }, 'containerId'],
    [{ node: 'n1', containerId: 'has space' }, 'containerId'],
    [{ node: 'n1', containerId: 'c1', ifname: 'much-too-long-ifname' }, 'ifname'],
    [{ node: 'n1', containerId: 'c1', ips: ['10.244.0.300'] }, 'ips[0]'],
    [{ node: 'n1', handle: 'h1', containerId: 'c1' }, 'containerId'],
  ];
  for (const [body, field] of alloc) {
    const r = await api(s.url, 'POST', '/api/v1/allocations', body);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.field, field, JSON.stringify(r.body));
  }
  const notJson = await api(s.url, 'POST', '/api/v1/pools', '{"name": ');
  assert.equal(notJson.status, 400);
  assert.equal(notJson.body.error.code, 'invalid_json');
  const wrongType = await api(s.url, 'POST', '/api/v1/pools', 'name=x', undefined, 'application/x-www-form-urlencoded');
  assert.equal(wrongType.status, 415);
  const release = await api(s.url, 'POST', '/api/v1/release', {});
  assert.equal(release.status, 400);
  assert.equal(release.body.error.field, 'ip');
  assert.match(release.body.error.message, /give "ip", "handle", or both/);
  const limit = await api(s.url, 'GET', '/api/v1/allocations?limit=0');
  assert.equal(limit.status, 400);
  assert.equal(limit.body.error.field, 'limit');
  const unknown = await api(s.url, 'GET', '/api/v1/nope');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error.code, 'not_found');
  const method = await api(s.url, 'PUT', '/api/v1/pools');
  assert.equal(method.status, 405);
});

test('serve api: nodes get pod CIDRs from the controller; allocations are paged, filtered and released', async () => {
  assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name: 'node-a', labels: { zone: 'a' } })).status, 201);
  const dup = await api(s.url, 'POST', '/api/v1/nodes', { name: 'node-a' });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.error.code, 'node_exists');
  const node = await waitFor('node-a pod CIDRs', 10_000, async () => {
    const r = await api(s.url, 'GET', '/api/v1/nodes/node-a');
    return r.body.podCIDRs?.length === 2 ? r.body : undefined;
  });
  assert.match(node.podCIDRs[0], /^10\.245\.\d+\.0\/24$/);
  assert.match(node.podCIDRs[1], /^fd00:10:245:[0-9a-f:]*\/64$/);

  const a1 = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', containerId: 'c1', network: 'net1' });
  assert.equal(a1.status, 201, JSON.stringify(a1.body));
  assert.equal(a1.body.handle, 'net1:c1:eth0');
  assert.equal(a1.body.ips.length, 2);
  assert.match(a1.body.ips[0], /^10\.244\./);
  assert.match(a1.body.ips[1], /^fd00:10:244:/);
  // Each address with its block's prefix and gateway (the block's first usable address).
  assert.deepEqual(
    a1.body.addresses.map((x: any) => x.prefixLen),
    [26, 122],
  );
  for (const x of a1.body.addresses) {
    const block = parsePrefix(x.block);
    assert.equal(x.gateway, formatAddr({ family: block.family, value: block.base + 1n }), JSON.stringify(x));
    assert.ok(parseAddr(x.ip).value - block.base >= 2n, `${x.ip} is its block's network address or gateway`);
  }
  const again = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', containerId: 'c1', network: 'net1' });
  assert.deepEqual(again.body.ips, a1.body.ips, 'a repeated ADD returns what the handle holds');
  for (let i = 2; i <= 5; i++)
    assert.equal((await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', containerId: `c${i}`, network: 'net1' })).status, 201);

  const byHandle = await api(s.url, 'GET', '/api/v1/allocations?handle=net1:c1:eth0');
  assert.deepEqual(byHandle.body.items.map((x: any) => x.ip).sort(), [...a1.body.ips].sort());
  // Paging over node-a's 10 addresses, 3 at a time: every address once.
  const seen: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < 10; page++) {
    const r = await api(s.url, 'GET', `/api/v1/allocations?node=node-a&limit=3${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    seen.push(...r.body.items.map((x: any) => x.ip));
    after = r.body.next;
    if (!after) break;
  }
  assert.equal(seen.length, 10);
  assert.equal(new Set(seen).size, 10);
  const v4only = await api(s.url, 'GET', '/api/v1/allocations?pool=default-ipv4&limit=100');
  assert.equal(v4only.body.items.length, 5);

  const blocks = await api(s.url, 'GET', '/api/v1/blocks?node=node-a');
  assert.equal(blocks.body.items.length, 2);
  const v4block = blocks.body.items.find((b: any) => b.pool === 'default-ipv4');
  assert.equal(v4block.allocated, 5);
  const detail = await api(s.url, 'GET', `/api/v1/blocks/${encodeURIComponent(v4block.cidr)}`);
  assert.equal(detail.status, 200);
  assert.equal(detail.body.node, 'node-a');
  assert.equal(detail.body.allocations.length, 5);
  assert.ok(detail.body.allocations.some((x: any) => x.ip === a1.body.ips[0] && x.handle === 'net1:c1:eth0'));
  const map = await api(s.url, 'GET', '/api/v1/pools/default-ipv4/blocks');
  assert.equal(map.body.slots, 1024);
  const drawn = map.body.cells.reduce((n: number, c: any) => n + (typeof c === 'number' ? c : 1), 0);
  assert.equal(drawn, 1024, 'every block slot of the pool is drawn');
  assert.deepEqual(
    map.body.cells.filter((c: any) => typeof c !== 'number').map((c: any) => c[0]),
    [v4block.cidr],
  );

  const rel = await api(s.url, 'DELETE', '/api/v1/allocations/net1:c1:eth0?node=node-a');
  assert.equal(rel.status, 200);
  assert.deepEqual([...rel.body.released].sort(), [...a1.body.ips].sort());
  assert.deepEqual((await api(s.url, 'DELETE', '/api/v1/allocations/net1:c1:eth0')).body.released, [], 'release is idempotent');
  const ov = await api(s.url, 'GET', '/api/v1/overview');
  assert.equal(ov.body.totals.allocated, 8);
  for (let i = 2; i <= 5; i++) assert.equal((await api(s.url, 'POST', '/api/v1/release', { handle: `net1:c${i}:eth0` })).status, 200);
  assert.equal((await api(s.url, 'DELETE', '/api/v1/nodes/node-a')).status, 200);
  assert.equal((await api(s.url, 'DELETE', '/api/v1/nodes/node-a')).status, 404);
});

test('serve api: check reports a leak and a block of a deleted node; release fixes the leak', async () => {
  assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name: 'node-b' })).status, 201);
  assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name: 'node-c' })).status, 201);
  const a = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-b', containerId: 'leaky', network: 'net1' });
  assert.equal(a.status, 201);
  const b = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-c', containerId: 'orphan', network: 'net1' });
  assert.equal(b.status, 201);
  assert.deepEqual((await api(s.url, 'GET', '/api/v1/check?maxAge=0')).body.leaks, []);
  // Damage the datastore as a crashed tool might: the handle record vanishes, node-c's record too.
  const store = await openStore(s.datastore);
  try {
    const h = await store.get(handleKey('net1:leaky:eth0'));
    const n = await store.get(nodeKey('node-c'));
    assert.ok(h && n);
    assert.ok(
      (
        await store.txn(
          [
            { key: h.key, rev: h.rev },
            { key: n.key, rev: n.rev },
          ],
          [
            { type: 'delete', key: h.key },
            { type: 'delete', key: n.key },
          ],
        )
      ).succeeded,
    );
  } finally {
    await store.close();
  }
  const check = await api(s.url, 'GET', '/api/v1/check?maxAge=0');
  assert.equal(check.status, 200);
  assert.deepEqual(check.body.leaks.map((l: any) => l.ip).sort(), [...a.body.ips].sort());
  assert.ok(check.body.leaks.every((l: any) => l.handle === 'net1:leaky:eth0'));
  // node-c's two blocks (v4, v6) are affine to a node without a record — removed without the
  // tombstone a deletion writes, so nothing proves node-c gone: reported, never freed by GC.
  const orphan = check.body.problems.filter((p: any) => p.kind === 'block-node-unregistered' && /"node-c"/.test(p.message));
  assert.equal(orphan.length, 2, JSON.stringify(check.body.problems));

  // The dashboard's Release of a leak names the handle check saw: freed only while it holds the address.
  for (const ip of a.body.ips) {
    const r = await api(s.url, 'POST', '/api/v1/release', { ip, handle: 'net1:leaky:eth0' });
    assert.equal(r.status, 200);
    assert.equal(r.body.heldBy, 'net1:leaky:eth0');
    assert.deepEqual(r.body.released, [ip]);
  }
  const after = await api(s.url, 'GET', '/api/v1/check?maxAge=0');
  assert.deepEqual(after.body.leaks, []);
  // A second press on that stale finding (or one made after the GC freed it) once the address is
  // a new pod's: nothing is freed.
  const reused = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-b', containerId: 'newpod', network: 'net1', ips: a.body.ips });
  assert.equal(reused.status, 201, JSON.stringify(reused.body));
  for (const ip of a.body.ips) {
    const r = await api(s.url, 'POST', '/api/v1/release', { ip, handle: 'net1:leaky:eth0' });
    assert.equal(r.status, 200);
    assert.deepEqual([r.body.released, r.body.heldBy], [[], null], `a live pod's address released on a stale finding: ${JSON.stringify(r.body)}`);
  }
  const still = await api(s.url, 'GET', '/api/v1/allocations?node=node-b');
  assert.ok(JSON.stringify(still.body).includes('net1:newpod:eth0'), JSON.stringify(still.body));
  await api(s.url, 'POST', '/api/v1/release', { handle: 'net1:newpod:eth0' });
  await api(s.url, 'POST', '/api/v1/release', { handle: 'net1:orphan:eth0' });
  await api(s.url, 'DELETE', '/api/v1/nodes/node-b');
});

test('serve api: healthz, whoami and Prometheus metrics', async () => {
  const h = await api(s.url, 'GET', '/healthz');
  assert.equal(h.status, 200);
  assert.equal(h.body.status, 'ok');
  assert.equal(h.body.loops.controller.running, true);
  const w = await api(s.url, 'GET', '/api/v1/whoami');
  assert.deepEqual(w.body.role, 'admin');
  assert.equal(w.body.authRequired, false);
  const m = await api(s.url, 'GET', '/metrics');
  assert.equal(m.status, 200);
  assert.match(m.headers.get('content-type') ?? '', /text\/plain/);
  assert.match(m.body, /^podipam_pool_capacity_addresses\{pool="default-ipv4",family="4"\} 62464$/m);
  assert.match(m.body, /^podipam_pool_allocated_addresses\{pool="default-ipv4",family="4"\} \d+$/m);
  assert.match(m.body, /^podipam_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/pools",status="200"\} \d+$/m);
  assert.match(m.body, /^podipam_gc_runs_total/m);
  assert.match(m.body, /^podipam_nodes \d+$/m);
  assert.match(m.body, /^podipam_datastore_up 1$/m);
});

test('serve auth: a non-loopback address without tokens is refused before anything starts', async () => {
  const d = makeTempDir('serve-auth');
  try {
    const r = await runCli(['serve', '--listen', '0.0.0.0:0', '--data-dir', d.path]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /refusing to listen on 0\.0\.0\.0, which is not a loopback address, without API tokens/);
    const weak = await runCli(['serve', '--listen', '127.0.0.1:0', '--data-dir', d.path], { PODIPAM_ADMIN_TOKEN: 'short' });
    assert.equal(weak.code, 2);
    assert.match(weak.stderr, /at least 16 characters/);
  } finally {
    d.remove();
  }
});

test('serve auth: read token reads, admin token writes, no token gets 401', async () => {
  const d = makeTempDir('serve-tokens');
  const read = 'read-0123456789abcdef';
  const admin = 'admin-0123456789abcdef';
  writeFileSync(join(d.path, 'tokens'), `# podipam tokens\nread=${read}\nadmin = ${admin}\n`, { mode: 0o600 });
  const t = await startServe({ args: ['--token-file', join(d.path, 'tokens'), '--no-controller'] });
  try {
    assert.match(t.stdout(), /auth bearer tokens/);
    const anon = await api(t.url, 'GET', '/api/v1/pools');
    assert.equal(anon.status, 401);
    assert.equal(anon.body.error.code, 'unauthorized');
    assert.equal(anon.headers.get('www-authenticate'), 'Bearer realm="podipam"');
    assert.equal((await api(t.url, 'GET', '/api/v1/pools', undefined, 'wrong-token-0123456789')).status, 401);
    assert.equal((await api(t.url, 'GET', '/api/v1/pools', undefined, read)).status, 200);
    assert.equal((await api(t.url, 'GET', '/metrics', undefined, read)).status, 200);
    assert.equal((await api(t.url, 'GET', '/metrics')).status, 401);
    const denied = await api(t.url, 'POST', '/api/v1/pools', { name: 'p2', cidr: '10.50.0.0/16' }, read);
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, 'forbidden');
    assert.equal((await api(t.url, 'GET', '/api/v1/pools/p2', undefined, admin)).status, 404, 'the refused POST wrote nothing');
    assert.equal((await api(t.url, 'POST', '/api/v1/pools', { name: 'p2', cidr: '10.50.0.0/16' }, admin)).status, 201);
    assert.equal((await api(t.url, 'DELETE', '/api/v1/pools/p2', undefined, read)).status, 403);
    assert.equal((await api(t.url, 'GET', '/api/v1/whoami', undefined, read)).body.role, 'read');
    assert.equal((await api(t.url, 'GET', '/api/v1/whoami')).body.role, 'none');
    // The page itself carries no data and is public; /healthz too.
    assert.equal((await api(t.url, 'GET', '/')).status, 200);
    assert.equal((await api(t.url, 'GET', '/healthz')).status, 200);
  } finally {
    await t.stop();
    d.remove();
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr, parseAddr, prefixLast, parsePrefix } from '../../ip/index.js';
import { ClusterIpam } from '../../cluster/index.js';
import { openStore } from '../../store/index.js';
import { allocateAddresses } from './cluster-addresses.js';
import { DEFAULT_POOLS } from '../default-pools.js';

/** The address is neither the network, the gateway nor (IPv4) the broadcast address of the block it reports. */
function assertUsable(a: { ip: string; block: string; prefixLen: number; gateway: string }): void {
  const block = parsePrefix(a.block);
  const ip = parseAddr(a.ip);
  assert.equal(a.prefixLen, block.len, `${a.ip}: the prefix is the block's`);
  assert.equal(a.gateway, formatAddr({ family: block.family, value: block.base + 1n }), `${a.ip}: the gateway is the block's first usable address`);
  assert.ok(ip.value !== block.base, `${a.ip} is the network address of ${a.block}`);
  assert.ok(ip.value !== block.base + 1n, `${a.ip} is the gateway of ${a.block}`);
  if (ip.family === 4) assert.ok(ip.value !== prefixLast(block).value, `${a.ip} is the broadcast address of ${a.block}`);
}

test('API allocations on the default pools: block prefix and gateway, never a block’s network, gateway or broadcast address', async () => {
  const store = await openStore('memory:');
  try {
    const ipam = new ClusterIpam(store);
    for (const p of DEFAULT_POOLS) await ipam.createPool(p);
    // Many nodes claim blocks all over the pools (first and last blocks included, by their probe orders).
    const seen = new Set<string>();
    for (let n = 0; n < 300; n++) {
      const got = await allocateAddresses(ipam, { node: `node-${n}`, handle: `net.c${n}.eth0` });
      assert.deepEqual(
        got.map((a) => a.prefixLen),
        [26, 122],
      );
      for (const a of got) {
        assertUsable(a);
        seen.add(a.ip);
      }
    }
    assert.equal(seen.size, 600);
  } finally {
    await store.close();
  }
});

test('API allocations on a /30 pool with /30 blocks: its one usable address, then exhausted', async () => {
  const store = await openStore('memory:');
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'tiny', cidr: '10.91.0.0/30', blockSize: 30 });
    const [a] = await allocateAddresses(ipam, { node: 'n', handle: 'h0', pools: ['tiny'] });
    assert.deepEqual(a, { ip: '10.91.0.2', family: 4, block: '10.91.0.0/30', pool: 'tiny', prefixLen: 30, gateway: '10.91.0.1' });
    await assert.rejects(allocateAddresses(ipam, { node: 'n', handle: 'h1', pools: ['tiny'] }), { name: 'PoolExhaustedError' });
    await assert.rejects(
      allocateAddresses(ipam, { node: 'n', handle: 'h2', ips: ['10.91.0.3'] }),
      /10\.91\.0\.3 is not available: it is the broadcast address of block 10\.91\.0\.0\/30/,
    );
    await assert.rejects(ipam.createPool({ name: 'p31', cidr: '10.92.0.0/24', blockSize: 31 }), /'blockSize' 31 .*leaves no usable address/);
  } finally {
    await store.close();
  }
});

test('API releases are stamped "release" as the server\'s', async () => {
  const { releaseAddress, releaseHandleAddresses } = await import('./cluster-addresses.js');
  const { decodeStamp, stampKey } = await import('../../cluster/records/history-stamp.js');
  const store = await openStore('memory:');
  try {
    const ipam = new ClusterIpam(store, { writer: 'serve' });
    await ipam.createPool({ name: 'p', cidr: '10.9.0.0/24', blockSize: 28 });
    const why = async (): Promise<string | undefined> => {
      const e = (await store.get(stampKey('serve')))!;
      return decodeStamp(e.key, e.value).why;
    };
    await allocateAddresses(ipam, { node: 'n1', handle: 'net.a.eth0' });
    assert.equal(await why(), undefined);
    assert.equal((await releaseHandleAddresses(ipam, 'net.a.eth0', 'n1')).length, 1);
    assert.equal(await why(), 'release');
    const [b] = await allocateAddresses(ipam, { node: 'n1', handle: 'net.b.eth0' });
    await allocateAddresses(ipam, { node: 'n1', handle: 'net.c.eth0' });
    await ipam.releaseHandle('net.c.eth0'); // the same service, not through the API: a DEL's reason
    assert.equal(await why(), 'del');
    assert.equal(await releaseAddress(ipam, b!.ip), 'net.b.eth0');
    assert.equal(await why(), 'release');
  } finally {
    await store.close();
  }
});

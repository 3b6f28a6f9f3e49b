import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  type Family,
  type Prefix,
  addrAdd,
  addrEquals,
  formatAddr,
  parseAddr,
  parsePrefix,
  prefixContains,
  prefixFirst,
  prefixLast,
  subPrefix,
} from '../ip/index.js';
import { mulberry32 } from '../util/mulberry32.js';
import { type Block, addrOfOrdinal, allocateOrdinals, blockCapacity, freeCount, newBlock } from './block.js';
import { blockGateway, excludedRole, isUsableOrdinal, usableCount, usableSpan } from './block-addressing.js';
import { BLOCK_SIZE_RANGE } from './block-layout.js';

const POOL: Record<Family, Prefix> = { 4: parsePrefix('10.0.0.0/8'), 6: parsePrefix('fd00::/48') };

describe('block addressing', () => {
  it('a /30 block hands out exactly its .2, behind gateway .1', () => {
    const cidr = parsePrefix('10.91.0.0/30');
    const r = allocateOrdinals(newBlock(cidr, 'n'), 4, 'h');
    assert.deepEqual(
      r.ordinals.map((o) => formatAddr(addrOfOrdinal(cidr, o))),
      ['10.91.0.2'],
    );
    assert.equal(formatAddr(blockGateway(cidr)), '10.91.0.1');
    assert.equal(usableCount(cidr), 1n);
    assert.deepEqual(
      [0, 1, 2, 3].map((o) => excludedRole(cidr, o)),
      ['the network address of block 10.91.0.0/30', 'the gateway of block 10.91.0.0/30', undefined, 'the broadcast address of block 10.91.0.0/30'],
    );
  });

  it('a /126 block hands out its ::2 and ::3 (IPv6 has no broadcast), behind gateway ::1', () => {
    const cidr = parsePrefix('fd00:91::/126');
    const r = allocateOrdinals(newBlock(cidr, 'n'), 4, 'h');
    assert.deepEqual(
      r.ordinals.map((o) => formatAddr(addrOfOrdinal(cidr, o))),
      ['fd00:91::2', 'fd00:91::3'],
    );
    assert.equal(formatAddr(blockGateway(cidr)), 'fd00:91::1');
    assert.equal(excludedRole(cidr, 0), 'the subnet-router anycast address of block fd00:91::/126');
  });

  it('blocks smaller than /30 and /126 have no usable address', () => {
    for (const text of ['10.0.0.0/31', '10.0.0.0/32', 'fd00::/127', 'fd00::/128']) {
      const cidr = parsePrefix(text);
      assert.equal(usableSpan(cidr), undefined, text);
      assert.equal(usableCount(cidr), 0n, text);
      assert.deepEqual(allocateOrdinals(newBlock(cidr, 'n'), 2, 'h').ordinals, [], text);
      assert.match(excludedRole(cidr, 0)!, /too small to hand out any address/);
    }
  });

  it('ordinals outside the block are not usable', () => {
    const cidr = parsePrefix('10.0.0.0/29');
    assert.deepEqual(
      [-1, 0, 1, 2, 6, 7, 8, 2.5].map((o) => isUsableOrdinal(cidr, o)),
      [false, false, false, true, true, false, false, false],
    );
  });

  // Property: over every allowed block size of both families, blocks anywhere in the pool, any
  // cursor and any reservations, a block hands out exactly its usable addresses, and none of
  // them is the network, broadcast (IPv4) or gateway address of the prefix a result carries —
  // the gateway computed as `bridge` computes it (the address after the network address).
  for (const family of [4, 6] as Family[]) {
    const [min, max] = BLOCK_SIZE_RANGE[family];
    it(`no IPv${family} block /${min}…/${max} hands out its network, broadcast or gateway address (seeded)`, () => {
      const rnd = mulberry32(family * 1009);
      for (let len = min; len <= max; len++) {
        for (let trial = 0; trial < 6; trial++) {
          const count = 1n << BigInt(len - POOL[family].len);
          const cidr = subPrefix(POOL[family], len, BigInt(Math.floor(rnd() * 2 ** 30)) % count);
          const cap = blockCapacity(cidr);
          const reserved = new Set<number>();
          for (let i = 0; i < Math.floor(rnd() * 4); i++) reserved.add(Math.floor(rnd() * cap));
          const start: Block = { ...newBlock(cidr, 'n'), next: Math.floor(rnd() * cap) };
          let b = start;
          const handedOut: number[] = [];
          // Take addresses in random-sized bites until the block runs dry.
          for (let bites = 0; bites < cap + 1; bites++) {
            const r = allocateOrdinals(b, 1 + Math.floor(rnd() * 8), `h${bites}`, reserved);
            if (r.ordinals.length === 0) break;
            handedOut.push(...r.ordinals);
            b = r.block;
          }
          const network = prefixFirst(cidr);
          const broadcast = prefixLast(cidr);
          const gateway = addrAdd(network, 1n)!;
          assert.deepEqual(blockGateway(cidr), gateway);
          for (const o of handedOut) {
            const a = addrOfOrdinal(cidr, o);
            const at = `${formatAddr(a)} of ${formatAddr(network)}/${len}`;
            assert.ok(prefixContains(cidr, a), at);
            assert.ok(!addrEquals(a, network), `${at} is the network address`);
            assert.ok(!addrEquals(a, gateway), `${at} is the gateway`);
            if (family === 4) assert.ok(!addrEquals(a, broadcast), `${at} is the broadcast address`);
            assert.equal(excludedRole(cidr, o), undefined, at);
          }
          assert.equal(new Set(handedOut).size, handedOut.length, 'no ordinal handed out twice');
          const usableReserved = [...reserved].filter((o) => isUsableOrdinal(cidr, o)).length;
          const expectUsable = family === 4 ? cap - 3 : cap - 2;
          assert.equal(Number(usableCount(cidr)), expectUsable);
          assert.equal(handedOut.length, expectUsable - usableReserved, `every usable unreserved address of ${formatAddr(network)}/${len} was handed out`);
          assert.equal(freeCount(b, reserved), 0);
        }
      }
    });
  }

  it('the usable span of a pool prefix holds every block’s usable span', () => {
    const pool = parsePrefix('10.1.0.0/24');
    const span = usableSpan(pool)!;
    assert.deepEqual([formatAddr(span.start), formatAddr(span.end)], ['10.1.0.2', '10.1.0.254']);
    for (let i = 0n; i < 4n; i++) {
      const b = usableSpan(subPrefix(pool, 26, i))!;
      assert.ok(b.start.value >= span.start.value && b.end.value <= span.end.value);
    }
    assert.deepEqual(usableSpan(parsePrefix('fd00::/120'))!.end, parseAddr('fd00::ff'));
  });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix, parsePrefix, type Prefix } from '../ip/index.js';
import { CidrOutOfRangeError } from './cidr-out-of-range-error.js';
import { CidrSet } from './cidr-set.js';

const p = (s: string): Prefix => parsePrefix(s);
const text = (x: Prefix | undefined): string | undefined => (x ? formatPrefix(x) : undefined);

test('cidr set hands out node blocks round robin, wrapping, and reports exhaustion', () => {
  const set = new CidrSet(p('10.0.0.0/22'), 24);
  assert.equal(set.size, 4n);
  assert.deepEqual(
    [1, 2, 3].map(() => text(set.allocateNext())),
    ['10.0.0.0/24', '10.0.1.0/24', '10.0.2.0/24'],
  );
  // Released blocks are reused last: the search goes on from the last one handed out.
  set.release(p('10.0.0.0/24'));
  assert.equal(text(set.allocateNext()), '10.0.3.0/24');
  assert.equal(text(set.allocateNext()), '10.0.0.0/24');
  assert.equal(set.allocateNext(), undefined);
  assert.equal(set.free, 0n);
  set.release(p('10.0.2.0/24'));
  assert.equal(text(set.allocateNext()), '10.0.2.0/24');
});

test('cidr set occupy and release are idempotent and cover what the CIDR touches', () => {
  const set = new CidrSet(p('10.0.0.0/16'), 24);
  set.occupy(p('10.0.5.0/24'));
  set.occupy(p('10.0.5.0/24'));
  assert.equal(set.used, 1n);
  set.release(p('10.0.5.0/24'));
  set.release(p('10.0.5.0/24'));
  assert.equal(set.used, 0n);
  // Larger than a block: every covered block; smaller: the one holding it.
  set.occupy(p('10.0.8.0/22'));
  assert.equal(set.used, 4n);
  set.occupy(p('10.0.20.7/32'));
  assert.equal(set.used, 5n);
  assert.equal(set.isUsed(p('10.0.20.0/24')), true);
  // Larger than the cluster: everything.
  set.occupy(p('10.0.0.0/8'));
  assert.equal(set.used, 256n);
  assert.equal(set.allocateNext(), undefined);
  set.release(p('10.0.0.0/15'));
  assert.equal(set.used, 0n);
});

test('cidr set rejects CIDRs outside the cluster CIDR, naming both', () => {
  const set = new CidrSet(p('10.0.0.0/16'), 24);
  assert.throws(
    () => set.occupy(p('10.1.0.0/24')),
    (e: unknown) => {
      assert.ok(e instanceof CidrOutOfRangeError);
      assert.equal(e.message, 'cidr 10.1.0.0/24 is out the range of cluster cidr 10.0.0.0/16');
      return true;
    },
  );
  assert.throws(() => set.release(p('fd00::/64')), CidrOutOfRangeError);
  assert.equal(set.used, 0n);
});

test('cidr set rejects a node mask shorter than the cluster mask, naming the value', () => {
  assert.throws(() => new CidrSet(p('10.0.0.0/16'), 8), /'nodeLen' must be an integer from 16 to 32: current value is 8/);
  assert.throws(() => new CidrSet(p('fd00::/48'), 129), /from 48 to 128: current value is 129/);
});

test('cidr set never hands out a block the service CIDR touches, even after a covering release', () => {
  const set = new CidrSet(p('10.0.0.0/22'), 24);
  set.exclude(p('10.0.1.128/25'));
  const got = [1, 2, 3].map(() => text(set.allocateNext()));
  assert.deepEqual(got, ['10.0.0.0/24', '10.0.2.0/24', '10.0.3.0/24']);
  assert.equal(set.allocateNext(), undefined);
  set.release(p('10.0.0.0/22'));
  assert.equal(set.used, 1n);
  assert.equal(set.isUsed(p('10.0.1.0/24')), true);
  set.reset();
  assert.equal(set.used, 1n);
});

test('cidr set keeps an excluded block used after releasing another small CIDR in the same block', () => {
  // The exclusion and the released CIDR share no address, but both lie in node block
  // 10.0.1.0/24: the release must leave that block used, so allocateNext never hands it out.
  const set = new CidrSet(p('10.0.0.0/23'), 24);
  set.exclude(p('10.0.1.0/28'));
  set.release(p('10.0.1.128/25'));
  assert.equal(set.isUsed(p('10.0.1.0/24')), true);
  assert.equal(set.used, 1n);
  assert.equal(text(set.allocateNext()), '10.0.0.0/24');
  assert.equal(set.allocateNext(), undefined);
});

test('cidr set runs a v6 /32 cluster with /64 node blocks (2^32 blocks)', () => {
  const set = new CidrSet(p('2001:db8::/32'), 64);
  assert.equal(set.size, 1n << 32n);
  const seen = new Set<string>();
  for (let i = 0; i < 20000; i++) seen.add(text(set.allocateNext()) as string);
  assert.equal(seen.size, 20000);
  assert.ok(seen.has('2001:db8:0:4e1f::/64'));
  // A reservation of 2^24 blocks costs one tree path, and the search jumps over it.
  set.exclude(p('2001:db8:100::/40'));
  assert.equal(set.used, 20000n + (1n << 24n));
  set.occupy(p('2001:db8:0:4e20::/59'));
  assert.equal(text(set.allocateNext()), '2001:db8:0:4e40::/64');
  // Fill everything but the very last block, then take it, then nothing is left.
  set.occupy(p('2001:db8::/33'));
  set.occupy(p('2001:db8:8000::/34'));
  set.occupy(p('2001:db8:c000::/35'));
  set.occupy(p('2001:db8:e000::/36'));
  set.occupy(p('2001:db8:f000::/37'));
  set.occupy(p('2001:db8:f800::/38'));
  for (let len = 39; len <= 64; len++) {
    // Cover the remaining top half of the last /(len-1) except its last block.
    const base = (0x20010db8n << 96n) | (((1n << BigInt(len - 32)) - 2n) << BigInt(128 - len));
    set.occupy({ family: 6, base, len });
  }
  assert.equal(set.free, 1n);
  assert.equal(text(set.allocateNext()), '2001:db8:ffff:ffff::/64');
  assert.equal(set.allocateNext(), undefined);
});

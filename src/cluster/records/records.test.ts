import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allocateOrdinals, newBlock } from '../../alloc/block.js';
import { parsePrefix } from '../../ip/index.js';
import { decodeAffinity, encodeAffinity } from './affinity-record.js';
import { decodeBlock, encodeBlock } from './block-record.js';
import { CorruptRecordError } from './errors.js';
import { adjustHandle, decodeHandle, encodeHandle } from './handle-record.js';
import { DEFAULT_IPAM_CONFIG, decodeConfig, effectiveMaxBlocks, encodeConfig, nextGeneration } from './ipam-config.js';
import { blockKey } from './keys.js';
import { decodePool, encodePool, validatePoolSpec } from './pool-record.js';
import { decodeReservation, encodeReservation, parseReservedCidr, reservedSet } from './reservation-record.js';

const entry = (key: string, value: string) => ({ key, value, rev: 3 });
const corrupt = (fn: () => unknown, re: RegExp) => assert.throws(fn, (e: unknown) => e instanceof CorruptRecordError && re.test(e.message));

describe('block records', () => {
  const cidr = parsePrefix('10.0.0.64/26');
  it('round-trip, listing only allocated ordinals', () => {
    const b = allocateOrdinals(newBlock(cidr, 'n1'), 2, 'h').block;
    const text = encodeBlock(b);
    assert.equal(text, '{"cidr":"10.0.0.64/26","affinity":"n1","next":4,"allocations":{"2":"h","3":"h"}}');
    assert.deepEqual(decodeBlock(entry(blockKey(cidr), text)), b);
    const orphan = { ...newBlock(cidr, null) };
    assert.deepEqual(decodeBlock(entry(blockKey(cidr), encodeBlock(orphan))), orphan);
  });

  it('carry release times of a quarantining pool; a record without them (older) decodes with none', () => {
    const b = {
      ...allocateOrdinals(newBlock(cidr, 'n1'), 1, 'h').block,
      released: new Map([
        [5, 1764835200123],
        [40, 1764835201000],
      ]),
    };
    const text = encodeBlock(b);
    assert.equal(text, '{"cidr":"10.0.0.64/26","affinity":"n1","next":3,"allocations":{"2":"h"},"released":{"5":1764835200123,"40":1764835201000}}');
    assert.deepEqual(decodeBlock(entry(blockKey(cidr), text)), b);
    const old = decodeBlock(entry(blockKey(cidr), '{"cidr":"10.0.0.64/26","affinity":"n1","next":3,"allocations":{"2":"h"}}'));
    assert.equal(old.released, undefined);
    const k = blockKey(cidr);
    const base = '{"cidr":"10.0.0.64/26","affinity":"n","next":0,"allocations":{"2":"h"},"released":';
    corrupt(() => decodeBlock(entry(k, `${base}[]}`)), /"released" is not an object/);
    corrupt(() => decodeBlock(entry(k, `${base}{"64":1}}`)), /released ordinal "64" is outside 0-63/);
    corrupt(() => decodeBlock(entry(k, `${base}{"3":"now"}}`)), /released ordinal 3 has time "now"/);
    corrupt(() => decodeBlock(entry(k, `${base}{"3":1.5}}`)), /released ordinal 3 has time 1\.5/);
    corrupt(() => decodeBlock(entry(k, `${base}{"2":1}}`)), /ordinal 2 is both allocated and released/);
  });

  it('refuse corrupt values naming key and problem', () => {
    const k = blockKey(cidr);
    corrupt(() => decodeBlock(entry(k, '{')), /blocks\/10\.0\.0\.64-26 is corrupt: not JSON/);
    corrupt(() => decodeBlock(entry(k, '[]')), /not a JSON object/);
    corrupt(() => decodeBlock(entry('blocks/10.0.0.0-26', encodeBlock(newBlock(cidr, 'n')))), /does not match the key/);
    corrupt(() => decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n","next":64,"allocations":{}}')), /"next" is 64/);
    corrupt(() => decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n","next":0,"allocations":{"64":"h"}}')), /ordinal "64"/);
    corrupt(() => decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n","next":0,"allocations":{"01":"h"}}')), /ordinal "01"/);
    corrupt(() => decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n","next":0,"allocations":{"1":""}}')), /handle ""/);
    corrupt(() => decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":5,"next":0,"allocations":{}}')), /"affinity" is 5/);
    corrupt(() => decodeBlock(entry(k, '{"cidr":"nope","affinity":"n","next":0,"allocations":{}}')), /invalid CIDR/);
    // an escape that decodes to a lone surrogate: no key or value may hold one
    corrupt(() => decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n","next":0,"allocations":{"1":"h\\ud800"}}')), /lone surrogate/);
    corrupt(() => decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n\\udc00x","next":0,"allocations":{}}')), /lone surrogate/);
    // a pair is well-formed, and an escaped backslash before "ud800" is no escape
    assert.equal(decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n\\ud83d\\ude00","next":0,"allocations":{}}')).affinity, 'n\u{1F600}');
    assert.equal(decodeBlock(entry(k, '{"cidr":"10.0.0.64/26","affinity":"n\\\\ud800","next":0,"allocations":{}}')).affinity, 'n\\ud800');
  });
});

describe('handle records', () => {
  it('round-trip and adjust counts, dropping blocks that reach zero', () => {
    const h = { node: 'n', network: 'net', containerId: 'c', ifname: 'eth0', blocks: new Map([['10.0.0.0/26', 1]]) };
    const text = encodeHandle(h);
    assert.equal(text, '{"node":"n","network":"net","containerId":"c","ifname":"eth0","blocks":{"10.0.0.0/26":1}}');
    assert.deepEqual(decodeHandle(entry('handles/x', text)), h);
    const more = adjustHandle(
      h,
      new Map([
        ['10.0.0.0/26', 1],
        ['fd00::/122', 1],
      ]),
    );
    assert.deepEqual(
      [...more.blocks],
      [
        ['10.0.0.0/26', 2],
        ['fd00::/122', 1],
      ],
    );
    assert.deepEqual([...adjustHandle(more, new Map([['10.0.0.0/26', -2]])).blocks], [['fd00::/122', 1]]);
    assert.equal(h.blocks.get('10.0.0.0/26'), 1, 'the input is not mutated');
  });

  it('refuse non-canonical blocks, bad counts and a missing node', () => {
    corrupt(() => decodeHandle(entry('handles/x', '{"node":"n","blocks":{"10.0.0.1/26":1}}')), /invalid CIDR|not canonical/);
    corrupt(() => decodeHandle(entry('handles/x', '{"node":"n","blocks":{"10.0.0.0/26":0}}')), /count for 10\.0\.0\.0\/26 is 0/);
    corrupt(() => decodeHandle(entry('handles/x', '{"blocks":{}}')), /"node"/);
  });
});

describe('pool records', () => {
  it('validate with Calico defaults and round-trip', () => {
    const p = validatePoolSpec({ name: 'v6', cidr: 'fd00::/64' });
    assert.equal(p.blockSize, 122);
    assert.equal(p.nodeSelector.text, 'all()');
    assert.equal(validatePoolSpec({ name: 'v4', cidr: '10.0.0.0/16' }).blockSize, 26);
    assert.deepEqual(decodePool(entry('pools/v6', encodePool(p))), p);
    const deleting = { ...p, deleting: true };
    assert.deepEqual(decodePool(entry('pools/v6', encodePool(deleting))), deleting);
    assert.equal(p.reuseAfterMs, 0);
    assert.ok(!encodePool(p).includes('reuseAfter'), 'an unset reuseAfter is not stored');
    const q = validatePoolSpec({ name: 'q', cidr: '10.0.0.0/16', reuseAfter: '90s' });
    assert.equal(q.reuseAfterMs, 90_000);
    assert.deepEqual(decodePool(entry('pools/q', encodePool(q))), q);
    assert.equal(validatePoolSpec({ name: 'q', cidr: '10.0.0.0/16', reuseAfter: '500ms' }).reuseAfterMs, 500);
  });

  it('refuse bad specs naming field and value', () => {
    assert.throws(() => validatePoolSpec({ name: 'p', cidr: 'x' }), /invalid pool cidr "x"/);
    assert.throws(() => validatePoolSpec({ name: 'p', cidr: 'fe80::/64' }), /link-local fe80::\/10/);
    assert.throws(() => validatePoolSpec({ name: 'p', cidr: '10.0.0.0/16', disabled: 'yes' as unknown as boolean }), /invalid pool disabled "yes"/);
    corrupt(() => decodePool(entry('pools/p', '{"cidr":"10.0.0.0/16","blockSize":19,"nodeSelector":"all()"}')), /'blockSize' 19/);
    assert.throws(
      () => validatePoolSpec({ name: 'p', cidr: '10.0.0.0/16', reuseAfter: 'soon' }),
      (e: unknown) => e instanceof TypeError && /invalid pool reuseAfter "soon": expected a duration/.test(e.message),
    );
    assert.throws(
      () => validatePoolSpec({ name: 'p', cidr: '10.0.0.0/16', reuseAfter: '2h' }),
      (e: unknown) => e instanceof RangeError && /invalid pool reuseAfter "2h": at most 1h/.test(e.message),
    );
    assert.throws(() => validatePoolSpec({ name: 'p', cidr: '10.0.0.0/16', reuseAfter: 30 as unknown as string }), /invalid pool reuseAfter 30/);
    corrupt(() => decodePool(entry('pools/p', '{"cidr":"10.0.0.0/16","blockSize":26,"nodeSelector":"all()","reuseAfterMs":-1}')), /"reuseAfterMs" is -1/);
  });
});

describe('config and reservation records', () => {
  it('default when absent, bump generations, apply the block cap', () => {
    assert.equal(decodeConfig(undefined), DEFAULT_IPAM_CONFIG);
    const c = nextGeneration({ ...DEFAULT_IPAM_CONFIG, maxBlocksPerHost: 3 });
    assert.deepEqual(decodeConfig(entry('config', encodeConfig(c))), { strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 3, generation: 1 });
    assert.equal(effectiveMaxBlocks(c), 3);
    assert.equal(effectiveMaxBlocks(DEFAULT_IPAM_CONFIG), 20);
    corrupt(() => decodeConfig(entry('config', '{"strictAffinity":"yes"}')), /"strictAffinity"/);
  });

  it('reservations accept addresses and CIDRs and merge into one set', () => {
    assert.equal(parseReservedCidr('10.0.0.5').len, 32);
    assert.equal(parseReservedCidr('fd00::5').len, 128);
    assert.throws(() => parseReservedCidr('10.0.0.0/33'), /invalid reserved cidr "10\.0\.0\.0\/33"/);
    const r = { name: 'r', cidrs: [parsePrefix('10.0.0.0/30'), parsePrefix('10.0.0.4/30')] };
    assert.deepEqual(decodeReservation(entry('reservations/r', encodeReservation(r))), r);
    assert.equal(reservedSet([r]).ranges.length, 1, 'adjacent CIDRs merge');
    corrupt(() => decodeReservation(entry('reservations/r', '{"cidrs":"10.0.0.0/8"}')), /not an array/);
  });

  it('affinities keep their state', () => {
    assert.deepEqual(decodeAffinity(entry('affinities/n/10.0.0.0-26', encodeAffinity({ state: 'confirmed', claimedAt: 't' }))), {
      state: 'confirmed',
      claimedAt: 't',
    });
    corrupt(() => decodeAffinity(entry('affinities/n/10.0.0.0-26', '{"state":"claimed"}')), /"state" is "claimed"/);
  });
});

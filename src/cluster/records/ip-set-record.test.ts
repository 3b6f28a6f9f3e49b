import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IpRangeSet, formatAddr, parsePrefix } from '../../ip/index.js';
import { CorruptRecordError } from './errors.js';
import { decodeIpSet, encodeIpSet, formatIpSetRange, ipSetBlocks, parseIpSetRange } from './ip-set-record.js';

describe('ip-set record', () => {
  it('parses an address, a range and a CIDR', () => {
    assert.equal(formatIpSetRange(parseIpSetRange('10.0.0.5')), '10.0.0.5');
    assert.equal(formatIpSetRange(parseIpSetRange('10.0.0.5-10.0.0.9')), '10.0.0.5-10.0.0.9');
    assert.equal(formatIpSetRange(parseIpSetRange('10.0.0.8/30')), '10.0.0.8-10.0.0.11');
    assert.equal(formatIpSetRange(parseIpSetRange('fd00::5-fd00::7')), 'fd00::5-fd00::7');
  });

  it('refuses bad text naming the value', () => {
    for (const bad of ['', 'x', '10.0.0.9-10.0.0.5', '10.0.0.1-fd00::1', '10.0.0.0/33']) {
      assert.throws(
        () => parseIpSetRange(bad),
        (e: unknown) => e instanceof TypeError && e.message.startsWith(`invalid ip-set address ${JSON.stringify(bad)}`),
        bad,
      );
    }
  });

  it('round-trips, merging adjacent ranges', () => {
    const addrs = new IpRangeSet(['10.0.0.5-10.0.0.6', '10.0.0.7', '10.0.0.20'].map(parseIpSetRange));
    const value = encodeIpSet({ name: 'web', pool: 'p', addrs });
    assert.equal(value, '{"pool":"p","ranges":["10.0.0.5-10.0.0.7","10.0.0.20"]}');
    const back = decodeIpSet({ key: 'ipsets/web', value, rev: 3 });
    assert.equal(back.name, 'web');
    assert.equal(back.pool, 'p');
    assert.deepEqual([...back.addrs.addrs()].map(formatAddr), ['10.0.0.5', '10.0.0.6', '10.0.0.7', '10.0.0.20']);
  });

  it('a corrupt record names its key', () => {
    for (const value of ['{}', '{"pool":"p","ranges":[]}', '{"pool":"p","ranges":["zz"]}', '{"pool":"p","ranges":["10.0.0.1","fd00::1"]}', 'nope']) {
      assert.throws(
        () => decodeIpSet({ key: 'ipsets/x', value, rev: 1 }),
        (e: unknown) => e instanceof CorruptRecordError && e.key === 'ipsets/x',
        value,
      );
    }
  });

  it('lists the blocks holding the addresses', () => {
    const addrs = new IpRangeSet(['10.0.0.14-10.0.0.33'].map(parseIpSetRange));
    assert.deepEqual(
      ipSetBlocks(addrs, 28),
      ['10.0.0.0/28', '10.0.0.16/28', '10.0.0.32/28'].map((c) => parsePrefix(c)),
    );
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareKeys, prefixEnd } from './key-order.js';

describe('compareKeys', () => {
  it('orders like the UTF-8 bytes of the keys', () => {
    const keys = [
      '',
      'a',
      'a/',
      'a0',
      'ab',
      'ü',
      '\u07ff',
      '\u0800',
      '\ud7ff',
      '\ue000',
      '\uffff',
      '\u{10000}',
      '\u{1F600}',
      '\u{10FFFF}',
      'b',
      'a\u{10000}',
      'a\uffff',
    ];
    const byBytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    assert.deepEqual([...keys].sort(compareKeys), byBytes);
    assert.notDeepEqual([...keys].sort(), byBytes, 'UTF-16 order should differ here, or the test proves nothing');
  });

  it('is zero only for equal keys', () => {
    assert.equal(compareKeys('x\u{1F600}', 'x\u{1F600}'), 0);
    assert.ok(compareKeys('x', 'x\u0000') < 0);
  });
});

describe('prefixEnd', () => {
  it('is above every key with the prefix and not above the next key without it', () => {
    for (const prefix of ['a', 'pools/', 'ü', '\ud7ff', '\uffff', '\u{1F600}', 'a\u{10FFFF}']) {
      const end = prefixEnd(prefix) as string;
      for (const tail of ['', '\u0000', 'zzz', '\u{10FFFF}\u{10FFFF}']) assert.ok(compareKeys(prefix + tail, end) < 0, `${prefix}+${tail}`);
      assert.equal(end.startsWith(prefix), false);
    }
    assert.equal(prefixEnd('a'), 'b');
    assert.equal(prefixEnd('\ud7ff'), '\ue000');
    assert.equal(prefixEnd('\uffff'), '\u{10000}');
    assert.equal(prefixEnd('a\u{10FFFF}'), 'b');
  });

  it('is undefined when nothing is above the prefix', () => {
    assert.equal(prefixEnd(''), undefined);
    assert.equal(prefixEnd('\u{10FFFF}'), undefined);
  });
});

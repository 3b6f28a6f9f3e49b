import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseNodeSelector, selectorMatches, selectorUsesLabels } from './node-selector.js';

describe('node selectors', () => {
  it('treats all() and the empty string as every node', () => {
    for (const t of ['all()', '', '  all()  ']) {
      const s = parseNodeSelector(t);
      assert.equal(s.text, 'all()');
      assert.equal(selectorUsesLabels(s), false);
      assert.equal(selectorMatches(s, {}), true);
    }
  });

  it('matches every key=value and key!=value term, canonicalising spaces', () => {
    const s = parseNodeSelector(' zone = a , kubernetes.io/os=linux,gpu!=true ');
    assert.equal(s.text, 'zone=a,kubernetes.io/os=linux,gpu!=true');
    assert.equal(selectorUsesLabels(s), true);
    assert.equal(selectorMatches(s, { zone: 'a', 'kubernetes.io/os': 'linux' }), true);
    assert.equal(selectorMatches(s, { zone: 'a', 'kubernetes.io/os': 'linux', gpu: 'false' }), true);
    assert.equal(selectorMatches(s, { zone: 'a', 'kubernetes.io/os': 'linux', gpu: 'true' }), false);
    assert.equal(selectorMatches(s, { zone: 'b', 'kubernetes.io/os': 'linux' }), false);
    assert.equal(selectorMatches(s, { 'kubernetes.io/os': 'linux' }), false);
    assert.equal(selectorMatches(parseNodeSelector('role='), { role: '' }), true);
  });

  it('refuses malformed terms naming the selector and the term', () => {
    assert.throws(() => parseNodeSelector('zone'), /invalid nodeSelector "zone": term "zone" is not key=value/);
    assert.throws(() => parseNodeSelector('zone=a,,x=y'), /term ""/);
    assert.throws(() => parseNodeSelector('has(zone)'), TypeError);
    assert.throws(() => parseNodeSelector('-bad=x'), TypeError);
    assert.throws(() => parseNodeSelector('k=v w'), TypeError);
  });
});

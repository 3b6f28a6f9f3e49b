import { test } from 'node:test';
import assert from 'node:assert/strict';
import { interfaceNameProblem } from './interface-name.js';

test('interfaceNameProblem: the kernel and CNI rules', () => {
  assert.equal(interfaceNameProblem(''), 'empty');
  assert.equal(interfaceNameProblem('0123456789abcdef'), 'too-long');
  assert.equal(interfaceNameProblem('ééééééééé'), 'too-long', '18 bytes in 9 characters');
  assert.equal(interfaceNameProblem('.'), 'dot');
  assert.equal(interfaceNameProblem('..'), 'dot');
  for (const bad of ['a/b', 'a:b', 'a b', 'a\tb', 'a\nb', 'a\u0085b', 'a\u00a0b', 'a\u2028b'])
    assert.equal(interfaceNameProblem(bad), 'bad-character', JSON.stringify(bad));
  for (const good of ['eth0', 'net1', '0123456789abcde', 'eth0.100', '...', 'vxlan-x_y']) assert.equal(interfaceNameProblem(good), undefined, good);
});

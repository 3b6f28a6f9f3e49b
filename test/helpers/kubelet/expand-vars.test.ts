import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expandVars } from './expand-vars.js';

const env: Record<string, string> = { NODE_NAME: 'node-a', EMPTY: '', X: '$(NODE_NAME)' };
const look = (n: string): string | undefined => env[n];

test('expandVars replaces known $(VAR)s, keeps unknown ones literal, and $$ escapes', () => {
  assert.equal(expandVars('--node=$(NODE_NAME)', look), '--node=node-a');
  assert.equal(expandVars('$(NODE_NAME)/$(NODE_NAME)', look), 'node-a/node-a');
  assert.equal(expandVars('--x=$(UNKNOWN)', look), '--x=$(UNKNOWN)');
  assert.equal(expandVars('$$(NODE_NAME)', look), '$(NODE_NAME)');
  assert.equal(expandVars('$$$(NODE_NAME)', look), '$node-a');
  assert.equal(expandVars('a$(EMPTY)b', look), 'ab');
});

test('expandVars keeps a lone $, an unclosed $( and $() as written, and does not expand twice', () => {
  assert.equal(expandVars('cost $5 $', look), 'cost $5 $');
  assert.equal(expandVars('$(NODE_NAME', look), '$(NODE_NAME');
  assert.equal(expandVars('$()', look), '$()');
  assert.equal(expandVars('$(X)', look), '$(NODE_NAME)');
  assert.equal(expandVars('"$name" $HOME', look), '"$name" $HOME');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pokesHeadroom } from './headroom-poke.js';

test("only a runtime's ADD that found the node exhausted resyncs the headroom", () => {
  assert.equal(pokesHeadroom({ verb: 'ADD', result: 'code 100' }, false), true);
  assert.equal(pokesHeadroom({ verb: 'ADD', result: 'code 100' }, true), false, "the warm-up's");
  assert.equal(pokesHeadroom({ verb: 'ADD', result: 'ok' }, false), false);
  assert.equal(pokesHeadroom({ verb: 'DEL', result: 'code 100' }, false), false);
});

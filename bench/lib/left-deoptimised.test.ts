import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leftDeoptimised } from './left-deoptimised.js';

// As V8 prints them: `<JSFunction NAME (sfi = …)>`, `<JSFunction (sfi = …)>` for an anonymous function.
const fn = (name: string, sfi: string): string => `<JSFunction ${name ? `${name} ` : ''}(sfi = ${sfi})>`;
const opt = (name: string, sfi: string): string => `[completed optimizing 0x1 ${fn(name, sfi)} (target TURBOFAN)]`;
const bail = (name: string, sfi: string, reason: string): string =>
  `[bailout (kind: deopt-eager, reason: ${reason}): begin. deoptimizing 0x2 ${fn(name, sfi)}, 0x3 <Code TURBOFAN>, opt id 7, bytecode offset 1]`;
const mark = (name: string, sfi: string): string =>
  `[marking dependent code 0x4 <Code TURBOFAN> (${sfi} <SharedFunctionInfo ${name}>) (opt id 9) for deoptimization, reason: code dependencies]`;

test('leftDeoptimised: a function counts by its last event, by its SharedFunctionInfo', () => {
  const trace = [
    opt('scan', '0xa'),
    opt('scan', '0xb'), // another function of the same name
    bail('scan', '0xa', 'wrong map'),
    opt('allocate', '0xc'),
    mark('allocate', '0xc'),
    opt('answer', '0xd'),
    bail('answer', '0xd', 'Insufficient type feedback for call'),
    opt('answer', '0xd'), // optimised again: not left
    '[marking 0x5 <JSFunction x (sfi = 0xe)> for optimization to TURBOFAN, ConcurrencyMode::kConcurrent, reason: hot and stable]',
    bail('', '0xf', 'not a Smi'),
    mark('', '0x10'),
    opt('', '0x10'), // an anonymous function optimised again: not left
    bail('get size', '0x11', 'wrong map'),
  ].join('\n');
  assert.deepEqual(leftDeoptimised(trace), [
    { name: 'scan', reason: 'wrong map' },
    { name: 'allocate', reason: 'code dependencies' },
    { name: '(anonymous)', reason: 'not a Smi' },
    { name: 'get size', reason: 'wrong map' },
  ]);
});

test('leftDeoptimised: nothing deoptimised, nothing left', () => {
  assert.deepEqual(leftDeoptimised([opt('a', '0x1'), opt('b', '0x2'), 'other text'].join('\n')), []);
});

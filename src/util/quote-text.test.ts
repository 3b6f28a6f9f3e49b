import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeControls, escapeOutput, quoteText } from './quote-text.js';

// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

test('quoteText escapes C0, DEL, C1 and the separators, and cuts long values naming their length', () => {
  const nasty = 'a\u001b]0;x\u0007\n\u007f\u009b2J\u2028"\\';
  const q = quoteText(nasty);
  assert.ok(!RAW.test(q), q);
  assert.equal(JSON.parse(q), nasty, 'still a JSON string literal of the same text');
  assert.equal(quoteText('x'.repeat(300), 10), '"xxxxxxxxxx"… (300 characters)');
  assert.equal(quoteText('plain'), '"plain"');
});

test('escapeControls escapes every control character; escapeOutput keeps newline and tab', () => {
  assert.equal(escapeControls('web\u001b[31m\n'), 'web\\u001b[31m\\u000a');
  assert.equal(escapeControls('web-0'), 'web-0');
  assert.equal(escapeOutput('a\tb\u009bc\r\n'), 'a\tb\\u009bc\\u000d\n');
});

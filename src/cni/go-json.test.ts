import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type GoJsonValue, goMarshal, goMarshalIndent, goMarshalIndentEncoded, goQuote, goQuoteList, goString } from './go-json.js';

test('goMarshalIndent matches json.MarshalIndent(v, "", "    ") byte for byte', () => {
  const v = { cniVersion: '1.0.0', ips: [{ address: '10.1.0.2/24', gateway: '10.1.0.1' }], routes: undefined, dns: {} };
  assert.equal(
    goMarshalIndent(v),
    '{\n    "cniVersion": "1.0.0",\n    "ips": [\n        {\n            "address": "10.1.0.2/24",\n' +
      '            "gateway": "10.1.0.1"\n        }\n    ],\n    "dns": {}\n}',
  );
  assert.equal(goMarshalIndent([]), '[]');
  assert.equal(goMarshalIndent({ a: [], b: null, c: 1, d: true }), '{\n    "a": [],\n    "b": null,\n    "c": 1,\n    "d": true\n}');
});

test('goMarshal is compact', () => {
  assert.equal(goMarshal({ cniVersion: '1.1.0', supportedVersions: ['0.1.0', '1.1.0'] }), '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","1.1.0"]}');
});

test('goString escapes as Go: HTML characters, control characters, line separators', () => {
  assert.equal(goString('a<b>&c'), '"a\\u003cb\\u003e\\u0026c"');
  assert.equal(goString('q"\\\n\r\t'), '"q\\"\\\\\\n\\r\\t"');
  assert.equal(goString('\u0001\b\f\u001f'), '"\\u0001\\u0008\\u000c\\u001f"');
  assert.equal(goString('\u2028\u2029'), '"\\u2028\\u2029"');
  assert.equal(goString('é😀'), '"é😀"');
  assert.equal(goString('x\ud800y'), '"x\\ufffdy"');
  assert.equal(goString('\u007f'), '"\u007f"');
});

test('goQuote and goQuoteList print Go %q', () => {
  assert.equal(goQuote('K8S_POD_NAME=foo'), '"K8S_POD_NAME=foo"');
  assert.equal(goQuote('a"b\\c\n\x01'), '"a\\"b\\\\c\\n\\x01"');
  assert.equal(goQuoteList(['0.1.0', '0.2.0']), '["0.1.0" "0.2.0"]');
  assert.equal(goQuoteList([]), '[]');
});

test('goMarshalIndent writes what the encoder writes, for any value (its JSON.stringify path included)', () => {
  // Strings of every kind: HTML characters, controls, separators, lone surrogates, backslashes, "null".
  const text = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: fc.constantFrom('<', '>', '&', '\u2028', '\u2029', '\b', '\f', '\n', '\t', '\\', '"', '\ud800', 'a', 'é', 'n', 'u', 'l') }),
    fc.constantFrom('10.1.0.2/24', 'fd00::2/64', 'null', '\\u0041'),
  );
  const value: fc.Arbitrary<GoJsonValue> = fc.letrec<{ v: GoJsonValue }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      text,
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.array(tie('v'), { maxLength: 4 }),
      fc.dictionary(text, tie('v'), { maxKeys: 4 }),
    ),
  })).v;
  fc.assert(
    fc.property(value, (v) => {
      assert.equal(goMarshalIndent(v), goMarshalIndentEncoded(v));
    }),
    { numRuns: 3000, seed: 4242 },
  );
  // The result of a usual ADD takes the JSON.stringify path and is Go's text.
  const usual = { cniVersion: '1.0.0', ips: [{ address: '10.1.0.2/24', gateway: '10.1.0.1' }], dns: {} };
  assert.equal(goMarshalIndent(usual), JSON.stringify(usual, null, 4));
});

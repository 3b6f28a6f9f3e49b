import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BackupFileError, formatBackup, parseBackup } from './backup-file.js';

const entries = [
  { key: 'pools/b', value: '{"x":2}' },
  { key: 'blocks/10.0.0.0-28', value: 'line\nbreak "quoted" é' },
  { key: 'pools/a', value: '' },
];
const text = formatBackup('sqlite:/x.db', 42, new Date('2026-01-02T03:04:05Z'), entries);

test('formatBackup and parseBackup round-trip: entries in key order, header and trailer checked', () => {
  const b = parseBackup('f.jsonl', text);
  assert.deepEqual(
    b.entries.map((e) => e.key),
    ['blocks/10.0.0.0-28', 'pools/a', 'pools/b'],
  );
  assert.deepEqual(b.entries.find((e) => e.key === 'blocks/10.0.0.0-28')?.value, 'line\nbreak "quoted" é');
  assert.deepEqual(b.header, { podipamBackup: 1, source: 'sqlite:/x.db', rev: 42, at: '2026-01-02T03:04:05.000Z', keys: 3 });
  assert.equal(text.split('\n').length, 6, 'header, three entries, trailer, final newline');
  assert.equal(parseBackup('e', formatBackup('memory:', 0, new Date(0), [])).entries.length, 0);
});

test('parseBackup refuses a truncated, garbled or edited file, naming the file and the line', () => {
  const lines = text.split('\n');
  const cases: [string, string, RegExp][] = [
    ['cut mid-line', text.slice(0, text.length - 20), /^backup f line 5: the file does not end with a newline: it is cut short/],
    ['cut at a line', `${lines.slice(0, 3).join('\n')}\n`, /^backup f line 3: the header announces 3 keys but the file ends after 2 lines/],
    ['no trailer', `${lines.slice(0, 4).join('\n')}\n{"key":"zz","value":""}\n`, /^backup f line 5: expected the trailer/],
    ['garbled entry', text.replace('"pools/a"', '"pools/a'), /^backup f line 3: not JSON/],
    ['edited value', text.replace('{\\"x\\":2}', '{\\"x\\":3}'), /^backup f line 5: the entries' SHA-256 is [0-9a-f]{64}, the trailer says/],
    ['not ours', '{"hello":1}\n', /^backup f line 1: not a podipam backup/],
    ['newer format', text.replace('"podipamBackup":1', '"podipamBackup":2'), /^backup f line 1: format 2: this podipam reads format 1/],
    [
      'keys out of order',
      formatBackup('m', 1, new Date(0), entries).replace('"key":"pools/a"', '"key":"pools/c"'),
      /^backup f line 4: key "pools\/b" is not after "pools\/c"/,
    ],
    ['bad entry shape', text.replace('{"key":"pools/a","value":""}', '{"key":"pools/a","value":3}'), /^backup f line 3: an entry is/],
    ['empty key', text.replace('"key":"pools/a"', '"key":""'), /^backup f line 3: .*'key' must be a non-empty string/],
    ['sqlite file', 'SQLite format 3\0rest', /^backup f: this is a SQLite database file/],
    ['extra line', `${text}{"x":1}\n`, /^backup f line 6: more lines than/],
  ];
  for (const [what, bad, re] of cases)
    assert.throws(
      () => parseBackup('f', bad),
      (e: unknown) => e instanceof BackupFileError && re.test(e.message),
      what,
    );
});

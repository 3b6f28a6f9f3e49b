import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatJson, formatTable } from './output.js';

describe('formatTable', () => {
  it('aligns columns, right-aligns numbers, prints - for missing values, trims trailing space', () => {
    const rows = [
      { name: 'v4', n: 12, node: 'a' },
      { name: 'a-longer-name', n: 3, node: null },
    ];
    const out = formatTable(rows, [
      { header: 'NAME', value: (r) => r.name },
      { header: 'N', value: (r) => r.n },
      { header: 'NODE', value: (r) => r.node },
    ]);
    assert.equal(out, ['NAME            N  NODE', 'v4             12  a', 'a-longer-name   3  -', ''].join('\n'));
  });

  it('prints only the header for no rows, and honours explicit alignment', () => {
    assert.equal(
      formatTable(
        [],
        [
          { header: 'A', value: () => 1 },
          { header: 'B', value: () => 2 },
        ],
      ),
      'A  B\n',
    );
    assert.equal(
      formatTable(
        [{ x: 'ab' }, { x: 'c' }],
        [
          { header: 'X', value: (r) => r.x, align: 'right' },
          { header: 'Y', value: () => '' },
        ],
      ),
      ' X  Y\nab\n c\n',
    );
  });
});

describe('formatJson', () => {
  it('writes bigints as numbers when exact and as strings beyond 2^53', () => {
    assert.equal(formatJson({ a: 65536n, b: 1n << 64n, c: [1, 'x'] }), '{\n  "a": 65536,\n  "b": "18446744073709551616",\n  "c": [\n    1,\n    "x"\n  ]\n}\n');
  });
});

describe('formatTable with large counts', () => {
  it('prints M*2^N for big counts with a small odd factor', () => {
    const rows = [{ c: 31n << 67n }, { c: 3n << 40n }, { c: (1n << 40n) + 1n }];
    assert.equal(formatTable(rows, [{ header: 'C', value: (r) => r.c }]), ['            C', '      31*2^67', '       3*2^40', '1099511627777', ''].join('\n'));
  });

  it('prints powers of two from 2^32 as 2^N and smaller or other values in full', () => {
    const rows = [{ c: 1n << 72n }, { c: 1n << 32n }, { c: 65536n }, { c: (1n << 64n) + 1n }];
    assert.equal(
      formatTable(rows, [{ header: 'CAPACITY', value: (r) => r.c }]),
      ['            CAPACITY', '                2^72', '                2^32', '               65536', '18446744073709551617', ''].join('\n'),
    );
  });
});

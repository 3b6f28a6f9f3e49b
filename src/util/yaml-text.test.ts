import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import yaml from 'js-yaml';
import { yamlText } from './yaml-text.js';

describe('yamlText', () => {
  it('writes block mappings and sequences, quoting only what YAML would read otherwise', () => {
    const text = yamlText({
      items: [{ name: 'v4', cidr: '10.90.0.0/24', capacity: 1n << 72n, disabled: false, labels: {}, podCIDRs: [] }],
      note: 'yes',
      n: null,
    });
    assert.equal(
      text,
      [
        'items:',
        '  - name: v4',
        '    cidr: "10.90.0.0/24"',
        '    capacity: "4722366482869645213696"',
        '    disabled: false',
        '    labels: {}',
        '    podCIDRs: []',
        'note: "yes"',
        '"n": null',
        '',
      ] /* YAML 1.1 reads a bare n as false */
        .join('\n'),
    );
  });

  it('is read back by a YAML parser as the JSON value, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const expected: unknown = JSON.parse(JSON.stringify(v) ?? 'null');
        assert.deepEqual(yaml.load(yamlText(v)), expected);
      }),
      { numRuns: 2000 },
    );
  });
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  PodRecordError,
  decodeWarmPodRecord,
  encodeWarmPodRecord,
  parseWarmPodRecordKey,
  tryDecodeWarmPodRecord,
  warmPodRecordKey,
  warmPodRecordPrefix,
} from './warm-pod-record.js';

describe('warm pod record codec', () => {
  it('what the writer encodes every reader decodes: key, fields, since to the millisecond', () => {
    const key = warmPodRecordKey('node-a', 'net:c1/x:eth0');
    assert.ok(key.startsWith(warmPodRecordPrefix('node-a')) && key.startsWith(warmPodRecordPrefix('')));
    const since = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const value = encodeWarmPodRecord({
      addrs: ['10.0.0.2', 'fd00::2'],
      network: 'net',
      containerId: 'c1',
      ifname: 'eth0',
      namespace: 'ns',
      name: 'p',
      uid: 'u1',
      since,
      warmHandles: ['podipam-warm:node-a:r1', undefined],
    });
    const r = decodeWarmPodRecord(key, value);
    assert.deepEqual(r, {
      node: 'node-a',
      attachment: 'net:c1/x:eth0',
      addrs: ['10.0.0.2', 'fd00::2'],
      network: 'net',
      containerId: 'c1',
      ifname: 'eth0',
      namespace: 'ns',
      name: 'p',
      uid: 'u1',
      since,
      warmHandles: ['podipam-warm:node-a:r1', undefined],
    });
    assert.deepEqual(parseWarmPodRecordKey(key), { node: 'node-a', attachment: 'net:c1/x:eth0' });
  });

  it('optional fields absent or empty read as absent', () => {
    const r = decodeWarmPodRecord('agent-pods/n1/a', '{"addrs":[],"name":""}');
    assert.equal(r.name, undefined);
    assert.equal(r.since, undefined);
    assert.equal(r.warmHandles, undefined);
  });

  it('a bad record is a PodRecordError naming the key and the field', () => {
    const cases: [string, string, RegExp][] = [
      ['agent-pods/n1/a', '{not json', /pod record agent-pods\/n1\/a: the value is not JSON/],
      ['agent-pods/n1/a', '[1]', /not a JSON object/],
      ['agent-pods/n1/a', '{"addrs":"10.0.0.9"}', /field "addrs" is not a list/],
      ['agent-pods/n1/a', '{"addrs":[1]}', /field "addrs" is not a list/],
      ['agent-pods/n1/a', '{"addrs":[],"uid":7}', /field "uid" is not a string: 7/],
      ['agent-pods/n1/a', '{"addrs":[],"since":"yesterday"}', /field "since" is not a time: "yesterday"/],
      ['agent-pods/', '{"addrs":[]}', /the key is not agent-pods\/<node>\/<attachment>/],
      ['handles/x', '{"addrs":[]}', /the key is not/],
    ];
    for (const [key, value, re] of cases) {
      const e = tryDecodeWarmPodRecord(key, value);
      assert.ok(e instanceof PodRecordError, `${key} ${value}`);
      assert.equal(e.key, key);
      assert.match(e.message, re);
    }
    const notJson = tryDecodeWarmPodRecord('agent-pods/n1/a', '{');
    assert.ok(notJson instanceof Error && notJson.cause instanceof SyntaxError, 'the JSON error is its cause');
  });
});

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

  it('the compact form: network, container id and interface come from the key, one shared warm handle is named once', () => {
    const container = 'ab'.repeat(32);
    const attachment = `scale-net:${container}:eth0`;
    const key = warmPodRecordKey('node-a', attachment);
    const fields = {
      addrs: ['10.0.0.2', 'fd00::2'],
      network: 'scale-net',
      containerId: container,
      ifname: 'eth0',
      since: Date.UTC(2026, 0, 2),
      warmHandles: ['podipam-warm:node-a:r1', 'podipam-warm:node-a:r1'],
    };
    const full = encodeWarmPodRecord(fields);
    const compact = encodeWarmPodRecord(fields, attachment);
    assert.deepEqual(JSON.parse(compact), { addrs: fields.addrs, warmHandle: 'podipam-warm:node-a:r1', since: '2026-01-02T00:00:00.000Z' });
    assert.ok(compact.length < full.length / 2, `${compact.length} bytes against ${full.length}`);
    // Both forms read the same: what an earlier writer put and what this one puts.
    assert.deepEqual(decodeWarmPodRecord(key, compact), decodeWarmPodRecord(key, full));
    assert.equal(decodeWarmPodRecord(key, compact).containerId, container);
  });

  it('reads a record of the earlier full form as it was written', () => {
    // As the writer before the compact form put it (the bench's pods: no namespace, name or uid).
    const key = 'agent-pods/wnode-0/scale-net:0000000000000000000000000000000000000000000000000000000000000000:eth0';
    const old =
      '{"network":"scale-net","containerId":"0000000000000000000000000000000000000000000000000000000000000000","ifname":"eth0","addrs":["10.243.93.194","fd00:5c::5f4:2742"],"warmHandles":["podipam-warm:wnode-0:mx9a18sf-de4-1","podipam-warm:wnode-0:mx9a18sf-de4-1"],"since":"2026-12-04T17:47:58.440Z"}';
    assert.deepEqual(decodeWarmPodRecord(key, old), {
      node: 'wnode-0',
      attachment: 'scale-net:0000000000000000000000000000000000000000000000000000000000000000:eth0',
      addrs: ['10.243.93.194', 'fd00:5c::5f4:2742'],
      network: 'scale-net',
      containerId: '0000000000000000000000000000000000000000000000000000000000000000',
      ifname: 'eth0',
      namespace: undefined,
      name: undefined,
      uid: undefined,
      since: Date.parse('2026-12-04T17:47:58.440Z'),
      warmHandles: ['podipam-warm:wnode-0:mx9a18sf-de4-1', 'podipam-warm:wnode-0:mx9a18sf-de4-1'],
    });
  });

  it('keeps the full form where the key does not give the fields back, and an escaped key gives them back exactly', () => {
    const fields = { addrs: ['10.0.0.2', 'fd00::2'], network: 'net', containerId: 'c1', ifname: 'eth0', warmHandles: ['h1', 'h2'] };
    // The attachment is not the CNI handle of the three (a legacy dotted id): they are written.
    const legacy = JSON.parse(encodeWarmPodRecord(fields, 'net.c1.eth0')) as Record<string, unknown>;
    assert.equal(legacy.containerId, 'c1');
    assert.deepEqual(legacy.warmHandles, ['h1', 'h2'], 'two handles stay a list');
    // A missing handle is not shared.
    const partly = JSON.parse(encodeWarmPodRecord({ ...fields, warmHandles: ['h1', undefined] }, 'net:c1:eth0')) as Record<string, unknown>;
    assert.deepEqual(partly.warmHandles, ['h1', null]);
    // Escaped parts (a network with ":" and "%", an interface with "/") come back as they were.
    const odd = { addrs: ['10.0.0.3'], network: 'n:1%', containerId: 'c/2', ifname: 'e th', warmHandles: ['h'] };
    const attachment = 'n%3A1%25:c%2F2:e%20th';
    const compact = encodeWarmPodRecord(odd, attachment);
    assert.equal((JSON.parse(compact) as Record<string, unknown>).network, undefined);
    const r = decodeWarmPodRecord(warmPodRecordKey('n1', attachment), compact);
    assert.deepEqual([r.network, r.containerId, r.ifname, r.warmHandles], ['n:1%', 'c/2', 'e th', ['h']]);
    // A record with none of the three and a key that is no CNI handle: they stay absent.
    const none = decodeWarmPodRecord('agent-pods/n1/a:b', '{"addrs":[]}');
    assert.deepEqual([none.network, none.containerId, none.ifname], [undefined, undefined, undefined]);
    assert.equal(decodeWarmPodRecord('agent-pods/n1/a:%zz:c', '{"addrs":[]}').containerId, undefined);
    // One of the three present: the record is of the full form, nothing is taken from the key.
    assert.equal(decodeWarmPodRecord('agent-pods/n1/net:c1:eth0', '{"addrs":[],"network":"net"}').containerId, undefined);
    assert.match(String(tryDecodeWarmPodRecord('agent-pods/n1/a', '{"addrs":[],"warmHandle":7}')), /field "warmHandle" is not a string: 7/);
  });
});

/** The heartbeat codec: round trip, key and node, and every malformed value refused as corrupt. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_BEAT_PREFIX, agentBeatKey, agentBeatNode, decodeAgentBeat, encodeAgentBeat } from './index.js';
import { CorruptRecordError } from './errors.js';

test('a heartbeat round-trips and is small', () => {
  const b = { viewRev: 4711, at: '2026-12-05T07:00:00.000Z' };
  const value = encodeAgentBeat(b);
  assert.deepEqual(decodeAgentBeat({ key: agentBeatKey('n1'), value, rev: 9 }), b);
  assert.ok(value.length < 64, value);
  assert.equal(agentBeatKey('n1'), `${AGENT_BEAT_PREFIX}n1`);
  assert.equal(agentBeatNode('agent-beats/n1'), 'n1');
  assert.equal(agentBeatNode('agent-beats/'), undefined);
  assert.equal(agentBeatNode('agent-beats/a/b'), undefined);
  assert.equal(agentBeatNode('agent-views/n1'), undefined);
});

test('a malformed heartbeat is a CorruptRecordError naming the key', () => {
  const key = agentBeatKey('n1');
  for (const value of [
    'not json',
    '[]',
    '{}',
    '{"viewRev":0,"at":"2026-12-05T07:00:00.000Z"}',
    '{"viewRev":1.5,"at":"2026-12-05T07:00:00.000Z"}',
    '{"viewRev":"7","at":"2026-12-05T07:00:00.000Z"}',
    '{"viewRev":7}',
    '{"viewRev":7,"at":"yesterday"}',
  ]) {
    assert.throws(
      () => decodeAgentBeat({ key, value, rev: 1 }),
      (e: unknown) => e instanceof CorruptRecordError && e.message.includes(key),
      value,
    );
  }
  assert.throws(
    () => decodeAgentBeat({ key: 'agent-beats/a/b', value: encodeAgentBeat({ viewRev: 1, at: '2026-12-05T07:00:00.000Z' }), rev: 1 }),
    CorruptRecordError,
  );
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cniAnswerProblem } from './cni-answer-problem.js';
import { verbLabel } from './agent-stats.js';
import { parseAgentStatus } from './parse-agent-status.js';

test('a CNI answer: a result to ADD, nothing to other verbs, an error with a numeric code on failure', () => {
  assert.equal(cniAnswerProblem('ADD', 0, '{"cniVersion": "1.1.0", "ips": []}'), undefined);
  assert.equal(cniAnswerProblem('ADD', 0, '{"CNIVersion": "1.0.0"}'), undefined, 'keys case-insensitive, as Go reads them');
  assert.equal(cniAnswerProblem('DEL', 0, ''), undefined);
  assert.equal(cniAnswerProblem('GC', 0, '\n'), undefined);
  assert.equal(cniAnswerProblem('ADD', 1, '{\n    "code": 11,\n    "msg": "x"\n}'), undefined);
  for (const [verb, status, body] of [
    ['ADD', 0, '8.8.8.8/32'],
    ['ADD', 0, ''],
    ['ADD', 0, '{"cniVersion": 1}'],
    ['ADD', 0, '["cniVersion"]'],
    ['ADD', 0, '{"cniVersion": "1.0.0"} x'],
    ['DEL', 0, '{}'],
    ['CHECK', 0, 'x'],
    ['ADD', 1, 'oops'],
    ['ADD', 1, '{"code": "11"}'],
    ['DEL', 2, ''],
  ] as const) {
    assert.match(cniAnswerProblem(verb, status, body) ?? 'accepted', /not a CNI (result|error)/, `${verb} ${status} ${JSON.stringify(body)}`);
  }
});

test('verb labels: the CNI verbs, "none" when unset, "other" for anything a caller invents', () => {
  for (const v of ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS', 'VERSION']) assert.equal(verbLabel(v), v);
  assert.equal(verbLabel(undefined), 'none');
  assert.equal(verbLabel(''), 'none');
  for (const v of ['add', 'X1', 'ADD ', '"}\n']) assert.equal(verbLabel(v), 'other');
});

test('agent status answers are checked before they are printed', () => {
  const good = { pid: 1, node: 'n', socket: '/s', uptimeSeconds: 0, inFlight: 0, requests: { ADD: { ok: 1 } }, latencyMs: {}, backends: {}, datastore: { roundTrips: 0, groupCommits: 0, groupedAdds: 0, open: [] }, localScans: { full: 0, incremental: 0, reread: 0 } };
  assert.equal(parseAgentStatus(JSON.stringify(good), '/s').node, 'n');
  for (const bad of ['hello', '[]', '{"pid": 1}', JSON.stringify({ ...good, requests: { ADD: null } }), JSON.stringify({ ...good, warmPool: { pools: null } })]) {
    assert.throws(() => parseAgentStatus(bad, '/run/x.sock'), /\/run\/x\.sock answered .*not an agent status/, bad);
  }
});

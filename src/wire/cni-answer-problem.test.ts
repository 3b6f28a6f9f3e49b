import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cniAnswerProblem } from './cni-answer-problem.js';

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

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_PATTERN_LENGTH, isPoolPattern, matchPoolPattern, poolPatternProblem } from './pool-pattern.js';

test('pool patterns: *, ? and [...] as Go path.Match has them', () => {
  const yes: [string, string][] = [
    ['backup-ipv4*', 'backup-ipv4'],
    ['backup-ipv4*', 'backup-ipv4-zone-a'],
    ['*', 'anything.at-all'],
    ['v4-?', 'v4-a'],
    ['*-v4-*', 'a-v4-b'],
    ['zone-[abc]', 'zone-b'],
    ['zone-[a-c]-[0-9]', 'zone-c-7'],
    ['zone-[^a-c]', 'zone-d'],
    ['a*b*c', 'axxbyyc'],
    ['a**b', 'ab'],
    ['blue', 'blue'],
  ];
  const no: [string, string][] = [
    ['backup-ipv4*', 'backup-ipv6'],
    ['v4-?', 'v4-'],
    ['v4-?', 'v4-ab'],
    ['zone-[abc]', 'zone-d'],
    ['zone-[^a-c]', 'zone-a'],
    ['a*b*c', 'axxbyy'],
    ['*-v4', 'a-v4-b'],
    ['blue', 'blue6'],
  ];
  for (const [p, n] of yes) assert.ok(matchPoolPattern(p, n), `${p} matches ${n}`);
  for (const [p, n] of no) assert.ok(!matchPoolPattern(p, n), `${p} does not match ${n}`);
  assert.ok(isPoolPattern('a*') && isPoolPattern('a?') && isPoolPattern('a[b]') && !isPoolPattern('a.b-c'));
});

test('pool patterns: a malformed one is named, and matches nothing', () => {
  assert.equal(poolPatternProblem('zone-[a-c]*'), undefined);
  assert.match(poolPatternProblem('zone-[ab')!, /the "\[" at 6 is not closed/);
  assert.match(poolPatternProblem('zone-[]')!, /not closed|empty/);
  assert.match(poolPatternProblem('Zone-*')!, /"Z" at 1 is neither a pool-name character/);
  assert.match(poolPatternProblem('a/*')!, /"\/" at 2/);
  assert.match(poolPatternProblem('[z-a]')!, /range z-a/);
  assert.match(poolPatternProblem('\u001b*')!, /"\\u001b" at 1/);
  assert.match(poolPatternProblem('*'.repeat(MAX_PATTERN_LENGTH + 1))!, /at most 253/);
  assert.equal(matchPoolPattern('zone-[ab', 'zone-[ab'), false);
});

test('pool patterns: the worst pattern against the longest name is quick — no backtracking blow-up', () => {
  // A backtracking regular expression for this takes exponential time; one pass per star here.
  const name = 'a'.repeat(253);
  const pattern = `${'*a'.repeat(125)}*b`;
  assert.equal(poolPatternProblem(pattern), undefined);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < 100; i++) assert.equal(matchPoolPattern(pattern, name), false);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.ok(ms < 2000, `100 worst-case matches took ${ms.toFixed(0)} ms`);
  const q = `${'?'.repeat(120)}*${'?'.repeat(120)}x`;
  assert.equal(matchPoolPattern(q, name), false);
});

test('pool patterns: the same answers as a regular expression on 20,000 random short patterns and names', () => {
  // Short ones only: there the regular expression is quick, and every shape of pattern occurs.
  let seed = 7;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const parts = ['a', 'b', '-', '*', '?', '[ab]', '[^a]', '[a-b]'];
  const reOf = (p: string): RegExp =>
    new RegExp(
      `^${p
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')
        .replace(/-/g, '\\-')
        .replace(/\[\\-\]/g, '[-]')
        .replace(/\[\^/g, '[^')
        .replace(/\[a\\-b\]/g, '[a-b]')}$`,
    );
  for (let i = 0; i < 20_000; i++) {
    const pattern = Array.from({ length: 1 + rnd(6) }, () => parts[rnd(parts.length)]!).join('');
    const name = Array.from({ length: rnd(8) }, () => 'ab-'[rnd(3)]!).join('');
    assert.equal(matchPoolPattern(pattern, name), reOf(pattern).test(name), `${pattern} vs ${JSON.stringify(name)}`);
  }
});

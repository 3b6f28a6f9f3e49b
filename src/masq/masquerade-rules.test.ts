import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrefix } from '../ip/index.js';
import { chainRestoreText, JUMP_RULE, jumpArgs, MASQ_CHAIN, masqueradeFamilies } from './masquerade-rules.js';

const p = (s: string) => parsePrefix(s);

test('masqueradeFamilies: both families, each pool once, sorted, canonical', () => {
  const f = masqueradeFamilies([p('10.2.0.0/16'), p('fd00:1::/64'), p('10.1.0.0/24'), p('10.2.0.0/16'), p('FD00:0::/48')]);
  assert.deepEqual(f, [
    { family: 4, tool: 'iptables', cidrs: ['10.1.0.0/24', '10.2.0.0/16'] },
    { family: 6, tool: 'ip6tables', cidrs: ['fd00::/48', 'fd00:1::/64'] },
  ]);
  assert.deepEqual(masqueradeFamilies([]), [
    { family: 4, tool: 'iptables', cidrs: [] },
    { family: 6, tool: 'ip6tables', cidrs: [] },
  ]);
});

test('chainRestoreText: RETURN to every pool and multicast before MASQUERADE from every pool', () => {
  const [v4, v6] = masqueradeFamilies([p('10.1.0.0/24'), p('10.9.0.0/16'), p('fd00::/48')]);
  assert.equal(
    chainRestoreText(v4!),
    [
      '*nat',
      ':PODIPAM-MASQ - [0:0]',
      '-A PODIPAM-MASQ -d 10.1.0.0/24 -m comment --comment "podipam: to a pod, no NAT" -j RETURN',
      '-A PODIPAM-MASQ -d 10.9.0.0/16 -m comment --comment "podipam: to a pod, no NAT" -j RETURN',
      '-A PODIPAM-MASQ -d 224.0.0.0/4 -m comment --comment "podipam: multicast, no NAT" -j RETURN',
      '-A PODIPAM-MASQ -s 10.1.0.0/24 -m comment --comment "podipam: from a pod to outside the pod pools" -j MASQUERADE',
      '-A PODIPAM-MASQ -s 10.9.0.0/16 -m comment --comment "podipam: from a pod to outside the pod pools" -j MASQUERADE',
      'COMMIT',
      '',
    ].join('\n'),
  );
  const six = chainRestoreText(v6!);
  assert.match(six, /-d fd00::\/48 .* -j RETURN\n.*-d ff00::\/8 .* -j RETURN\n.*-s fd00::\/48 .* -j MASQUERADE\nCOMMIT\n$/);
  assert.doesNotMatch(six, /10\.|224\./, 'no IPv4 in the IPv6 chain');
});

test('chainRestoreText: a family without pools gets its chain declared (so flushed) and empty', () => {
  const [, v6] = masqueradeFamilies([p('10.1.0.0/24')]);
  assert.equal(chainRestoreText(v6!), '*nat\n:PODIPAM-MASQ - [0:0]\nCOMMIT\n');
});

test('the jump targets the chain, under a comment that names podipam', () => {
  assert.equal(JUMP_RULE.at(-1), MASQ_CHAIN);
  assert.ok(JUMP_RULE.join(' ').includes('--comment podipam:'));
});

test("jumpArgs: the jump is appended to POSTROUTING (after the operator's own rules), never inserted", () => {
  assert.deepEqual(jumpArgs('-A'), ['-w', '5', '-t', 'nat', '-A', 'POSTROUTING', ...JUMP_RULE]);
  assert.deepEqual(jumpArgs('-C').slice(0, 6), ['-w', '5', '-t', 'nat', '-C', 'POSTROUTING']);
  assert.deepEqual(jumpArgs('-D').slice(4), ['-D', 'POSTROUTING', ...JUMP_RULE]);
});

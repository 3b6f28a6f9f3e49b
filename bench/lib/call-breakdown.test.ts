import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callBreakdown } from './call-breakdown.js';

/** One pair's lines: driver (ADD 10 ms from t), shim (ADD then DEL), agent (a DEL, then the ADD). */
function pair(t: number, k: number, total = 10_000): { driver: string; shim: string; agent: string } {
  return {
    driver: `${total} 4000 ${t} ${t + total}`,
    shim: `podipam-shim-trace ${t + 2000} ${t + 2100} ${t + 2150} ${t + 6000 + k} ${t + 6100 + k}\npodipam-shim-trace 1 2 3 4 5`,
    agent: [
      `podipam-trace ${JSON.stringify({ verb: 'DEL', at: { accepted: 0, parsed: 0, handled: 0, replied: 0 } })}`,
      `podipam-trace ${JSON.stringify({ verb: 'ADD', batchWait: 0.2, locked: 1.5, write: 1, runqMs: 0.25, at: { accepted: t + 2200, parsed: t + 2500, handled: t + 5500, replied: t + 5900 } })}`,
    ].join('\n'),
  };
}

test('callBreakdown: each segment the median of its differences; the ADD lines of the agent matched in order', () => {
  const pairs = [pair(1_000_000, 0), pair(2_000_000, 50), pair(3_000_000, 100)];
  const gc = ['podipam-trace-gc 1005000 1000', 'podipam-trace-gc 2009500 1000', 'podipam-trace-gc 2500000 9000'].join('\n');
  const rows = callBreakdown(
    pairs.map((p) => p.driver).join('\n'),
    pairs.map((p) => p.shim).join('\n'),
    `noise\n${pairs.map((p) => p.agent).join('\n')}\n${gc}\n`,
  );
  const ms = Object.fromEntries(rows.map((r) => [r.label, r.ms]));
  assert.deepEqual(ms, {
    'exec + loading of the shim': 2,
    'shim: stdin, config, connect': 0.1,
    'shim: framing, write': 0.05,
    'agent: event loop until parsed': 0.35,
    '  of which from the accept': 0.3,
    'agent: handler outside the lock': 1.5,
    '  of which waiting for the batch': 0.2,
    'agent: allocation under the lock': 0.5,
    'agent: durable write': 1,
    'agent: encode the answer': 0.4,
    'write of the answer until the shim has it': 0.15, // 100, 150, 200 µs: the median
    'shim: check, print': 0.1,
    'shim exit until reaped': 3.85,
    'agent: in GC pauses during the call': 0.5, // 1 ms in the first call, 0.5 in the second (half inside it), none in the third
    'agent: waiting for a CPU (accept to answer)': 0.25,
    'total (driver)': 10,
  });
});

test('callBreakdown: p90, p99 and the tail extra point at the segment where the slowest calls lost their time', () => {
  // 20 pairs; one lost 10 ms between the agent's write of the answer and the shim reading it.
  const pairs = Array.from({ length: 20 }, (_, i) => (i === 7 ? pair(1_000_000 * (i + 1), 10_000, 20_000) : pair(1_000_000 * (i + 1), 0)));
  const gc = `podipam-trace-gc ${8_000_000 + 7000} 5000`; // inside the slow call (the 8th pair)
  const rows = callBreakdown(pairs.map((p) => p.driver).join('\n'), pairs.map((p) => p.shim).join('\n'), `${pairs.map((p) => p.agent).join('\n')}\n${gc}`);
  const row = (label: string) => rows.find((r) => r.label === label)!;
  const answer = row('write of the answer until the shim has it');
  assert.equal(answer.ms, 0.1);
  assert.equal(answer.p90, 0.1);
  assert.equal(answer.p99, 10.1);
  assert.equal(answer.tailExtra, 10); // the slowest 5 % is that one call: 10.1 - 0.1
  assert.equal(row('agent: durable write').tailExtra, 0);
  assert.equal(row('agent: in GC pauses during the call').tailExtra, 5);
  assert.equal(row('total (driver)').tailExtra, 10);
  assert.equal(row('total (driver)').p99, 20);
});

test('callBreakdown: lines that do not line up are an error naming the counts', () => {
  const p = pair(1_000_000, 0);
  assert.throws(() => callBreakdown(p.driver, '', p.agent), /1 pairs but 0 shim trace lines/);
  assert.throws(() => callBreakdown(p.driver, p.shim, ''), /1 ADDs but 0 agent trace lines/);
});

test('callBreakdown: a back end that traces no lock (the warm pool, cluster mode) gets one handler row', () => {
  const pairs = [pair(1_000_000, 0), pair(2_000_000, 0)].map((p) => ({ ...p, agent: p.agent.replace(/"batchWait":0\.2,"locked":1\.5,"write":1,/, '') }));
  const rows = callBreakdown(pairs.map((p) => p.driver).join('\n'), pairs.map((p) => p.shim).join('\n'), pairs.map((p) => p.agent).join('\n'));
  const labels = rows.map((r) => r.label);
  assert.ok(!labels.some((l) => /lock|durable write|batch/.test(l) && !l.startsWith('agent: handler (')), labels.join(', '));
  assert.equal(rows.find((r) => r.label === 'agent: handler (allocation, durable write)')?.ms, 3);
});

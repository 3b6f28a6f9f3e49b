import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callBreakdown } from './call-breakdown.js';

/** One pair's lines: driver (ADD 10 ms from t), shim (ADD then DEL), agent (a DEL, then the ADD). */
function pair(t: number, k: number): { driver: string; shim: string; agent: string } {
  return {
    driver: `${10_000} 4000 ${t} ${t + 10_000}`,
    shim: `podipam-shim-trace ${t + 2000} ${t + 2100} ${t + 2150} ${t + 6000 + k} ${t + 6100 + k}\npodipam-shim-trace 1 2 3 4 5`,
    agent: [
      `podipam-trace ${JSON.stringify({ verb: 'DEL', at: { accepted: 0, parsed: 0, handled: 0, replied: 0 } })}`,
      `podipam-trace ${JSON.stringify({ verb: 'ADD', batchWait: 0.2, locked: 1.5, write: 1, at: { accepted: t + 2200, parsed: t + 2500, handled: t + 5500, replied: t + 5900 } })}`,
    ].join('\n'),
  };
}

test('callBreakdown: each segment the median of its differences; the ADD lines of the agent matched in order', () => {
  const pairs = [pair(1_000_000, 0), pair(2_000_000, 50), pair(3_000_000, 100)];
  const rows = callBreakdown(pairs.map((p) => p.driver).join('\n'), pairs.map((p) => p.shim).join('\n'), `noise\n${pairs.map((p) => p.agent).join('\n')}\n`);
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
    'total (driver)': 10,
  });
});

test('callBreakdown: lines that do not line up are an error naming the counts', () => {
  const p = pair(1_000_000, 0);
  assert.throws(() => callBreakdown(p.driver, '', p.agent), /1 pairs but 0 shim trace lines/);
  assert.throws(() => callBreakdown(p.driver, p.shim, ''), /1 ADDs but 0 agent trace lines/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { encodeAnswer, requestReader } from '../wire/frame.js';
import type { CallHandler } from '../wire/call-answer.js';
import { warmUp } from './warm-up.js';

/** Serves one connection as the agent does: one framed request, `call`'s answer (a status request: an empty success). */
function serve(sock: Socket, call: CallHandler): void {
  const reader = requestReader();
  sock.resume(); // the warm-up's server, as the agent's, accepts connections paused
  sock.on('data', (chunk: Buffer) => {
    const req = reader.push(chunk);
    if (req === undefined) return;
    const answer = req.kind === 'status' ? Promise.resolve({ status: 0, output: '{}' }) : call({ ...req.call.env }, () => req.call.stdin.toString('utf8'));
    void answer.then((a) => sock.end(encodeAnswer({ status: a.status, body: Buffer.from(a.output) })));
  });
}

test('a warm pool whose warm-up could not start is reported; the rehearsal and the rounds still run the other calls', async () => {
  const seen: string[] = [];
  let made = 0;
  let closed = 0;
  const call: CallHandler = (env, stdin) => {
    seen.push(`${env.CNI_COMMAND} ${(JSON.parse(stdin()) as { name: string }).name}`);
    return Promise.resolve({ status: 0, output: env.CNI_COMMAND === 'ADD' ? '{"cniVersion":"1.0.0","ips":[]}' : '' });
  };
  const report = await warmUp({
    services: () => {
      made++;
      return {
        calls: [call, call],
        warmError: 'no room in the warm-up pool',
        close: () => {
          closed++;
          return Promise.resolve();
        },
      };
    },
    serve,
    node: 'warm-up-test-node',
    budgetMs: 100,
  });
  assert.ok(report, 'a warm-up ran');
  assert.equal(report.error, "the warm pool's warm-up could not start: no room in the warm-up pool");
  assert.equal(report.rehearsal.failed, 0);
  assert.ok(report.rehearsal.rounds > 0 && report.rehearsal.calls > 0, `the rehearsal ran: ${JSON.stringify(report.rehearsal)}`);
  assert.ok(report.rounds > 0 && report.calls > 0, `the rounds ran after the rehearsal's reported error: ${JSON.stringify(report)}`);
  assert.equal(report.failed, 0);
  assert.equal(made, 2, 'services made for the rehearsal and for the rounds');
  assert.equal(closed, 2, 'and closed after each');
  assert.ok(!seen.some((s) => s.endsWith('-warm')), `no call named the warm pool that did not start: ${[...new Set(seen)].join(', ')}`);
  assert.ok(seen.includes('ADD podipam-agent-warm-up') && seen.includes('DEL podipam-agent-warm-up-2'), [...new Set(seen)].join(', '));
});

test('a rehearsal that stopped on an error ends the warm-up: no rounds after it', async () => {
  let made = 0;
  const report = await warmUp({
    services: () => {
      made++;
      throw new Error('services cannot start');
    },
    serve,
    node: 'warm-up-test-node',
    budgetMs: 100,
  });
  assert.ok(report);
  assert.equal(report.error, 'services cannot start');
  assert.equal(made, 1, 'the rounds were not tried after the rehearsal stopped');
  assert.equal(report.rounds, 0);
  assert.equal(report.rehearsal.rounds, 0);
});

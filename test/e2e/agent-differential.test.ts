/**
 * The host-local differential (test/helpers/differential.ts) through the native shim and
 * `podipam agent`: byte-identical stdout and directory contents on randomized sequences,
 * host-local and the agent taking turns on one directory, and the table of fixed and bad cases.
 * Most of the agent's locked scans are served from its directory cache (read only what changed).
 * The shim's standalone fallback is off (PODIPAM_PLUGIN=""), so every answer came from the agent.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { SEED, type Subject, sequencesAgree, tableAgrees, takeTurns } from '../helpers/differential.js';
import { makeTempDir } from '../helpers/tmp.js';

const dir = makeTempDir('agent-diff');
let agent: RunningAgent;
let subject: Subject;

before(async () => {
  requireShim();
  agent = await startAgent(join(dir.path, 'agent.sock'));
  subject = { bin: SHIM_BIN, env: { PODIPAM_AGENT_SOCKET: agent.socket, PODIPAM_PLUGIN: '' } };
});

after(async () => {
  await agent?.stop();
  dir.remove();
});

test(`shim + agent and host-local agree on random ADD/DEL/CHECK sequences (seed ${SEED})`, (t) => sequencesAgree(subject, t));

test(`shim + agent and host-local take turns on ONE directory (seed ${SEED})`, (t) => takeTurns(subject, t));

test('shim + agent: reference table cases and bad input as host-local', () => tableAgrees(subject));

test('every call above was served by the agent (no fallback, no process per pod)', async () => {
  const s = await agent.status();
  const served = Object.values(s.requests).reduce((n, r) => n + Object.values(r).reduce((a, b) => a + b, 0), 0);
  assert.ok(served > 100, `the agent served ${served} calls: ${JSON.stringify(s.requests)}`);
  assert.ok((s.backends.local ?? 0) > 100, JSON.stringify(s.backends));
  // Most locked scans came from the agent's directory cache (src/local/scan-cache.ts), so the
  // byte-for-byte agreement above — host-local writing the same directory between the agent's
  // turns — is agreement of the cache with host-local's writes.
  assert.ok(s.localScans.incremental > s.localScans.full, `scans from the cache: ${JSON.stringify(s.localScans)}`);
});

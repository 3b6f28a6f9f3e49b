/**
 * Two agents started one after the other in one process each run a whole warm-up: the warm-up's
 * in-memory datastore is its own and is dropped after it (before, the second found the first's
 * pool, failed at once and reported nothing).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent } from './agent-main.js';
import { callsOfRounds } from './agent/warm-up-rounds.js';
import { recordingLog } from './log/logger.js';

test('each agent of a process runs its own warm-up, every call answered', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-agent-main-'));
  try {
    for (const name of ['a', 'b']) {
      const agent = await startAgent({ socket: join(dir, name, 'agent.sock'), node: `warm-${name}`, warmUpMs: 200, log: recordingLog() });
      try {
        const w = agent.warmUpReport;
        assert.ok(w && w.rounds >= 8 && w.calls === callsOfRounds(w.rounds, 3), `agent ${name}: ${JSON.stringify(w)}`);
        assert.equal(w.failed, 0, JSON.stringify(w));
        assert.equal(w.error, undefined, JSON.stringify(w));
      } finally {
        await agent.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Log fields are passed, not guessed from the words of a message: `podipam serve`'s
 * controller "ready: … node blocks used …" line carries no node field. In JSON lines the
 * ids a line concerns are fields the code gave (the controller's "assigned" names its node).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { api, startServe, waitFor } from './serve-harness.js';

type Line = Record<string, unknown>;

function lines(text: string): Line[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

test('serve logs: no id invented from a message (node=blocks); the ids given are fields', { timeout: 60_000 }, async () => {
  const s = await startServe({ env: { PODIPAM_LOG_FORMAT: 'json' } });
  try {
    const ready = await waitFor("the controller's ready line", 20_000, async () => lines(s.stderr()).find((l) => String(l.msg).startsWith('ready:')));
    assert.match(String(ready.msg), /node blocks used/, JSON.stringify(ready));
    assert.equal(ready.node, undefined, `an id made up from the message: ${JSON.stringify(ready)}`);
    assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name: 'node-a' })).status, 201);
    const assigned = await waitFor("the controller's assigned line", 20_000, async () => lines(s.stderr()).find((l) => l.msg === 'assigned'));
    assert.equal(assigned.node, 'node-a', JSON.stringify(assigned));
    assert.match(String(assigned.podCIDRs), /^10\.245\.\d+\.0\/24,fd00:10:245:/, JSON.stringify(assigned));
    assert.equal(assigned.component, 'controller');
  } finally {
    await s.stop();
  }
});

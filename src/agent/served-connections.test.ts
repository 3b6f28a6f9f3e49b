/**
 * What the agent tells its hosted services about the connections it serves (ServedConnections):
 * a call on the only open connection sees 1 (it may skip waiting for company); a call while
 * another client is connected sees 2; a closed connection no longer counts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type ServedConnections } from './agent-server.js';
import { callAgent } from '../wire/agent-client.js';

/** Polls `ok` every 10 ms, failing after 5 s. */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; !ok(); i++) {
    assert.ok(i < 500, 'the agent did not settle within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a call sees the connections open on the agent: 1 alone, 2 beside another client, 1 again once that one closed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-served-'));
  const socket = join(dir, 'agent.sock');
  let served: ServedConnections | undefined;
  const agent = await Agent.start({
    socket,
    node: 'n1',
    warmUp: false,
    host: async (s) => {
      served = s;
      return {
        call: async () => ({ status: 0, output: `${s.open()}` }),
        status: () => ({}) as never,
        start: async () => undefined,
        close: async () => undefined,
      };
    },
  });
  const open = async (): Promise<string> => {
    const a = await callAgent(socket, { kind: 'cni', call: { env: { CNI_COMMAND: 'DEL' }, stdin: Buffer.from('{}') } });
    return a.body.toString('utf8');
  };
  try {
    assert.equal(await open(), '1', 'the caller alone');
    const other = connect(socket);
    await new Promise<void>((resolve, reject) => other.once('connect', resolve).once('error', reject));
    // The agent accepts in its own turn, and forgets the first call's connection once closed.
    await until(() => served!.open() === 1);
    assert.equal(await open(), '2', 'the caller and the idle client');
    other.destroy();
    await until(() => served!.open() === 0);
    assert.equal(await open(), '1', 'the closed client no longer counts');
  } finally {
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

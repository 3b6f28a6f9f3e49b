/** The agent's own options, checked at the edge: each refusal names the option as given and its value. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentConfigError, agentConfig } from './agent-config.js';

const flag = (f: string): string => `--${f === 'allowUids' ? 'allow-uid' : f}`;

test('a node name, uids and a datastore URL are checked; the first refused names its flag and value', async () => {
  assert.deepEqual(await agentConfig({ node: 'node-1.example', allowUids: ['0', '65534'], datastore: 'etcd://127.0.0.1:2379' }, flag), {
    node: 'node-1.example',
    allowUids: [0, 65534],
    datastore: 'etcd://127.0.0.1:2379',
  });
  const refused = async (o: Parameters<typeof agentConfig>[0], field: string, msg: RegExp): Promise<void> => {
    await assert.rejects(agentConfig(o, flag), (e: unknown) => e instanceof AgentConfigError && e.field === field && msg.test(e.message));
  };
  await refused({ node: 'nA', allowUids: [] }, 'node', /^invalid --node "nA": a node name must be a DNS subdomain/);
  await refused({ node: 'a_b', allowUids: [] }, 'node', /invalid --node "a_b"/);
  await refused({ node: '', allowUids: [] }, 'node', /invalid --node ""/);
  await refused({ allowUids: ['root'] }, 'allowUids', /invalid --allow-uid "root": expected a numeric uid/);
  await refused({ allowUids: [], datastore: 'mysql://x' }, 'datastore', /invalid --datastore "mysql:\/\/x"/);
  // No node given: the default (environment, host name) is taken as it is.
  assert.equal((await agentConfig({ allowUids: [] })).node.length > 0, true);
});

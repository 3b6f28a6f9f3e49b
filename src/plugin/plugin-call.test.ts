import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { agentOf } from './dispatch.js';
import { pluginCall } from './plugin-call.js';

const env = (command: string) => ({ CNI_COMMAND: command, CNI_CONTAINERID: 'c1', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/usr/lib/cni' });

test('pluginCall answers a typed value: the code of its error JSON, the back end the selection chose', async () => {
  const dir = makeTempDir('plugin-call');
  try {
    const conf = (ipam: Record<string, unknown>) =>
      JSON.stringify({ cniVersion: '1.0.0', name: 'n', ipam: { type: 'podipam', dataDir: join(dir.path, 'd'), ...ipam } });
    const ok = await pluginCall(env('ADD'), () => conf({ ranges: [[{ subnet: '10.9.0.0/24' }]] }));
    assert.equal(ok.status, 0);
    assert.equal(ok.code, undefined);
    assert.equal(ok.backend, 'local');
    assert.match(ok.output, /"10\.9\.0\.2\/24"/);
    const refused = await pluginCall(env('ADD'), () => conf({ ranges: [[{ subnet: 'usePodCidr' }]] }));
    assert.deepEqual([refused.status, refused.code, refused.backend], [1, 7, 'usePodCidr']);
    assert.equal((JSON.parse(refused.output) as { code: number }).code, 7);
    const undecodable = await pluginCall(env('ADD'), () => '{"cniVersion":');
    assert.deepEqual([undecodable.status, undecodable.code, undecodable.backend], [1, 6, undefined]);
    const version = await pluginCall({ CNI_COMMAND: 'VERSION' }, () => '');
    assert.deepEqual([version.status, version.code, version.backend], [0, undefined, undefined]);
  } finally {
    dir.remove();
  }
});

test('agentOf: the agent a parsed config names (keys as Go reads them), never a text match', () => {
  const c = (ipam: unknown) => JSON.stringify({ cniVersion: '1.0.0', name: 'agent-net', ipam });
  assert.deepEqual(agentOf(c({ agent: '/run/a.sock' })), { socket: '/run/a.sock', standalone: false });
  assert.deepEqual(agentOf(c({ Agent: '/run/a.sock', ranges: [] })), { socket: '/run/a.sock', standalone: true });
  assert.deepEqual(agentOf(c({ agent: '/run/a.sock', datastore: 'sqlite:/x.db' })), { socket: '/run/a.sock', standalone: true });
  assert.equal(agentOf(c({ type: 'podipam', dataDir: '/var/lib/agent', ranges: [] })), undefined, '"agent" in a value is no agent');
  assert.equal(agentOf(c({ agent: 'relative.sock' })), undefined, 'dispatch refuses it (code 7)');
  assert.equal(agentOf('{"ipam": {"agent": "/a.sock"'), undefined, 'dispatch reports the decode error');
  assert.equal(agentOf(JSON.stringify({ name: 'agent' })), undefined);
});

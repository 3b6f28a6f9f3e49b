/**
 * `podipam agent --optimize` through the built binary: by default the agent stops V8 optimising
 * once its warm-up has run (status `optimizing: false`); with "always", or with no warm-up
 * (`--warm-up 0s`, warned), V8 goes on (true); both serve calls. Anything else is refused with
 * exit 2 naming the flag (or, from a config file, the key) and the value, before anything listens.
 * (That V8 honours it: src/util/stop-optimizing.integration.test.ts.)
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

const dir = makeTempDir('agent-optimize');
after(() => dir.remove());

test(
  'the agent stops V8 optimising after its warm-up by default, not with --optimize always nor without a warm-up; all serve',
  { timeout: 60_000 },
  async () => {
    requireShim();
    for (const [want, args, optimizing] of [
      // 100 ms: a target of 8 rounds (warm-up-rounds.ts), the least any warm-up runs: completed however busy the machine.
      ['default', ['--warm-up', '100ms'], false],
      ['always', ['--optimize', 'always'], true],
      ['no-warm-up', ['--warm-up', '0s'], true],
    ] as const) {
      const socket = join(dir.path, want, 'agent.sock');
      const agent = await startAgent(socket, args);
      try {
        assert.equal((await agent.status()).optimizing, optimizing, agent.log());
        if (want === 'no-warm-up') assert.match(agent.log(), /no completed warm-up: V8 goes on optimising/);
        const call = {
          command: 'ADD',
          containerId: `c-${want}`,
          ifname: 'eth0',
          config: {
            cniVersion: '1.0.0',
            name: `n-${want}`,
            ipam: { type: 'podipam', ranges: [[{ subnet: '10.77.0.0/24' }]], dataDir: join(dir.path, want, 'data') },
          },
          env: { PODIPAM_AGENT_SOCKET: socket, PODIPAM_PLUGIN: '' },
        };
        const added = await runPlugin(SHIM_BIN, call);
        assert.equal(added.code, 0, added.stderr + added.stdout);
        assert.equal((stdoutJson(added) as { ips: { address: string }[] }).ips[0]?.address, '10.77.0.2/24', added.stdout);
        const deleted = await runPlugin(SHIM_BIN, { ...call, command: 'DEL' });
        assert.equal(deleted.code, 0, deleted.stderr + deleted.stdout);
      } finally {
        await agent.stop();
      }
    }
  },
);

test('--optimize with an unknown value, on the command line or in a config file, is a usage error naming it', { timeout: 60_000 }, () => {
  const sock = join(dir.path, 'bad', 'agent.sock');
  const r = spawnSync(PODIPAM_BIN, ['agent', '--socket', sock, '--metrics-listen', 'off', '--optimize', 'never'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /invalid --optimize "never": expected one of warm-up, always/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  const file = join(dir.path, 'agent.json');
  writeFileSync(file, JSON.stringify({ optimize: 'sometimes' }));
  const f = spawnSync(PODIPAM_BIN, ['agent', '--socket', sock, '--metrics-listen', 'off', '--config', file], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(f.status, 2, f.stderr);
  assert.match(f.stderr, /optimize.*"sometimes": expected one of warm-up, always/);
});

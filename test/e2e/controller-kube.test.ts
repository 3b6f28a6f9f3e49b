/**
 * `bin/podipam controller --kubeconfig FILE` against the fake API server: Nodes get distinct
 * spec.podCIDRs, and a deleted Node's CIDR goes to the next Node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

async function waitFor(what: string, check: () => boolean, log: () => string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}; controller log:\n${log()}`);
}

test("controller --kubeconfig patches distinct podCIDRs onto Nodes and reuses a deleted Node's CIDR", async () => {
  const kube = await startFakeKubeApiServer();
  try {
    await withTempDir('kube', async (dir) => {
      kube.writeKubeconfig(join(dir, 'kubeconfig'));
      kube.addNode('w1');
      kube.addNode('w2');
      const argv = [
        PODIPAM_BIN,
        '--datastore',
        `sqlite:${join(dir, 'podipam.db')}`,
        'controller',
        '--cluster-cidr',
        '10.50.0.0/23,fd50::/63',
        '--node-mask-size',
        '24',
        '--node-mask-size-v6',
        '64',
        '--poll-interval',
        '100',
        '--kubeconfig',
        join(dir, 'kubeconfig'),
      ];
      const [cmd, args] = existsSync('/usr/bin/setpriv')
        ? ['/usr/bin/setpriv', ['--pdeathsig', 'SIGKILL', process.execPath, ...argv]]
        : [process.execPath, argv];
      const ctl = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      live.add(ctl);
      let log = '';
      ctl.stderr.setEncoding('utf8').on('data', (d: string) => (log += d));
      const exited = new Promise<number | null>((r) => ctl.once('exit', (code) => r(code)));
      try {
        const cidrs = (n: string) => kube.getNode(n)?.spec.podCIDRs;
        await waitFor(
          'w1 and w2 patched',
          () => cidrs('w1')?.length === 2 && cidrs('w2')?.length === 2,
          () => log,
        );
        const all = [...(cidrs('w1') ?? []), ...(cidrs('w2') ?? [])];
        assert.equal(new Set(all).size, 4, all.join(' '));
        assert.equal(kube.getNode('w1')?.spec.podCIDR, cidrs('w1')?.[0]);
        assert.match(cidrs('w1')?.[0] ?? '', /^10\.50\.[01]\.0\/24$/);
        assert.match(cidrs('w1')?.[1] ?? '', /^fd50::(1:0:0:0)?\/64$|^fd50:0:0:1::\/64$/);

        // The cluster is full: w3 waits, named in the log, until w1 goes.
        kube.addNode('w3');
        await waitFor(
          'CIDRNotAvailable for w3',
          () => /CIDRNotAvailable: node "w3" cannot get an IPv4 pod CIDR: no remaining node CIDRs in cluster CIDRs 10\.50\.0\.0\/23/.test(log),
          () => log,
        );
        const freed = cidrs('w1');
        kube.deleteNode('w1');
        await waitFor(
          "w3 to get w1's CIDRs",
          () => cidrs('w3')?.length === 2,
          () => log,
        );
        assert.deepEqual(cidrs('w3'), freed);
      } finally {
        if (ctl.exitCode === null && ctl.signalCode === null) ctl.kill('SIGTERM');
        assert.equal(await exited, 0, log);
        live.delete(ctl);
      }
    });
  } finally {
    await kube.close();
  }
});

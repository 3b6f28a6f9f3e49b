/**
 * The whole chain, every step through bin/podipam as its users run it: `podipam node add` →
 * the running controller assigns the node a pod CIDR → a CNI ADD with
 * `"ranges": [[{"subnet": "usePodCidr"}]]` returns an address inside that CIDR.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatAddr, parseAddr, parseCidr, parsePrefix, prefixContains } from '../../src/ip/index.js';
import { PODIPAM_BIN, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Runs the CLI without blocking the event loop (the controller's stderr keeps flowing in). */
function cli(datastore: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [PODIPAM_BIN, '--datastore', datastore, ...args], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test('node add → controller assigns a CIDR → CNI ADD with usePodCidr returns an address inside it', async (t) => {
  await withTempDir('chain', async (dir) => {
    const datastore = `sqlite:${join(dir, 'podipam.db')}`;
    const argv = [PODIPAM_BIN, '--datastore', datastore, 'controller', '--cluster-cidr', '10.244.0.0/16', '--node-mask-size', '24', '--poll-interval', '100'];
    const [cmd, args] = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', ['--pdeathsig', 'SIGKILL', process.execPath, ...argv]] : [process.execPath, argv];
    const ctl = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    live.add(ctl);
    let log = '';
    ctl.stderr.setEncoding('utf8').on('data', (d: string) => (log += d));
    const exited = new Promise<void>((r) => ctl.once('exit', () => r()));
    try {
      const added = await cli(datastore, 'node', 'add', 'node-a', '--label', 'zone=a');
      assert.equal(added.code, 0, added.stderr);

      let cidr: string | undefined;
      for (let i = 0; i < 100 && !cidr; i++) {
        const listed = await cli(datastore, 'node', 'list', '--json');
        assert.equal(listed.code, 0, listed.stderr);
        const nodes = (JSON.parse(listed.stdout) as { items: { name: string; podCIDRs: string[] }[] }).items;
        cidr = nodes.find((n) => n.name === 'node-a')?.podCIDRs[0];
        if (!cidr) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(cidr, `the controller assigned node-a a CIDR; its log:\n${log}`);
      assert.match(log, /assigned node=node-a podCIDRs=10\.244\.\d+\.0\/24/);
      t.diagnostic(`node-a got ${cidr}`);

      const ipam = { type: 'podipam', ranges: [[{ subnet: 'usePodCidr' }]], datastore, nodeName: 'node-a', dataDir: join(dir, 'cni') };
      const config = { cniVersion: '1.0.0', name: 'chain', type: 'bridge', ipam };
      const addRun = await runPlugin(PODIPAM_BIN, { command: 'ADD', containerId: 'pod-1', ifname: 'eth0', config });
      assert.equal(addRun.code, 0, `ADD failed: ${addRun.stdout}${addRun.stderr}`);
      const result = stdoutJson(addRun) as { ips: { address: string }[] };
      const ip = parseCidr(result.ips[0]?.address ?? '');
      assert.ok(prefixContains(parsePrefix(cidr), ip.addr), `${result.ips[0]?.address} is inside ${cidr}`);
      assert.equal(ip.len, 24);

      // A second pod gets another address of the same CIDR; DEL releases the first.
      const second = stdoutJson(await runPlugin(PODIPAM_BIN, { command: 'ADD', containerId: 'pod-2', ifname: 'eth0', config })) as {
        ips: { address: string }[];
      };
      const ip2 = parseAddr((second.ips[0]?.address ?? '').split('/')[0] as string);
      assert.ok(prefixContains(parsePrefix(cidr), ip2) && ip2.value !== ip.addr.value);
      const netDir = join(dir, 'cni', 'chain');
      const file1 = join(netDir, formatAddr(ip.addr));
      const file2 = join(netDir, formatAddr(ip2));
      assert.equal(readFileSync(file1, 'utf8'), 'pod-1\r\neth0', 'the first pod holds its address on disk');
      const delRun = await runPlugin(PODIPAM_BIN, { command: 'DEL', containerId: 'pod-1', ifname: 'eth0', config });
      assert.equal(delRun.code, 0, delRun.stdout + delRun.stderr);
      assert.equal(existsSync(file1), false, `DEL left ${file1}: the first address is not released`);
      assert.equal(readFileSync(file2, 'utf8'), 'pod-2\r\neth0', "DEL of the first pod left the second pod's address alone");

      // A node the controller has not served yet: the plugin says "try again later" (code 11).
      const unknown = await runPlugin(PODIPAM_BIN, {
        command: 'ADD',
        containerId: 'pod-3',
        ifname: 'eth0',
        config: { ...config, ipam: { ...ipam, nodeName: 'node-b' } },
      });
      assert.notEqual(unknown.code, 0);
      assert.equal((stdoutJson(unknown) as { code: number }).code, 11, unknown.stdout);
      assert.match(unknown.stdout, /node-b/);
    } finally {
      if (ctl.exitCode === null && ctl.signalCode === null) ctl.kill('SIGTERM');
      await exited;
      live.delete(ctl);
    }
    assert.match(log, /controller stopping \(SIGTERM\)/);
  });
});

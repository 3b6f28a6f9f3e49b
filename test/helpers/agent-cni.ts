/**
 * The CLI and CNI set-up the containerd tests share: a `podipam` CLI on one datastore that fails
 * the test with its stderr, and `podipam install-cni` into a test containerd's CNI directories
 * for the agent back end (the native shim, no masquerade), returning the conflist it wrote.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SHIM_BIN } from './agent.js';
import type { Containerd } from './containerd.js';
import { runCliSync } from './plugin.js';

/** `podipam --datastore URL …`: its stdout; a non-zero exit fails the test naming the command. */
export function cliOn(url: string): (args: readonly string[]) => string {
  return (args) => {
    const r = runCliSync(url, args);
    assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
}

/** install-cni for the agent on `socket` as node `node` (extra flags after, e.g. `--interface ptp`): the conflist's path. */
export function installAgentCni(
  rt: Containerd,
  url: string,
  o: { readonly socket: string; readonly node: string; readonly extra?: readonly string[] },
): string {
  cliOn(url)([
    'install-cni',
    '--bin-dir',
    rt.cniBinDir,
    '--conf-dir',
    rt.cniConfDir,
    '--backend',
    'agent',
    '--agent-socket',
    o.socket,
    '--node-name',
    o.node,
    ...(o.extra ?? []),
    '--no-ip-masq',
    '--shim',
    SHIM_BIN,
  ]);
  const name = readdirSync(rt.cniConfDir).find((n) => n.endsWith('.conflist'));
  assert.ok(name, `install-cni wrote no .conflist into ${rt.cniConfDir}`);
  return join(rt.cniConfDir, name);
}

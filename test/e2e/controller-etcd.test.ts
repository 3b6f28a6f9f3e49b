/**
 * The node-CIDR controller as a process (`bin/podipam controller`) on real etcd: killed with
 * SIGKILL mid-registration and restarted, and two of them racing, must never record one CIDR
 * for two nodes nor leave a node without one CIDR per family.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { addNode } from '../../src/controller/add-node.js';
import { listNodes } from '../../src/controller/list-nodes.js';
import { decodeNodeCidrClaim, NODE_CIDR_CLAIM_PREFIX } from '../../src/controller/node-cidr-claim.js';
import { parsePrefix, prefixContainsPrefix, prefixOverlaps } from '../../src/ip/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import { startEtcd } from '../helpers/etcd.js';
import { PODIPAM_BIN } from '../helpers/plugin.js';

const CLUSTER = ['10.128.0.0/14', 'fd00:10::/48'];
const FLAGS = ['--cluster-cidr', CLUSTER.join(','), '--node-mask-size', '24', '--node-mask-size-v6', '64', '--poll-interval', '100'];

interface ControllerProcess {
  readonly child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  log(): string;
  /** Resolves as soon as stderr matches `re` (checked on every chunk, no polling); rejects on exit. */
  logged(re: RegExp): Promise<void>;
  /** Sends `signal` and resolves when it has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

function startController(datastore: string): ControllerProcess {
  const argv = [PODIPAM_BIN, '--datastore', datastore, 'controller', ...FLAGS];
  // setpriv --pdeathsig: the kernel kills the controller if this test process dies first.
  const [cmd, args] = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', ['--pdeathsig', 'SIGKILL', process.execPath, ...argv]] : [process.execPath, argv];
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  let stderr = '';
  const watchers: { re: RegExp; resolve: () => void }[] = [];
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const w of watchers.splice(0)) {
      if (w.re.test(stderr)) w.resolve();
      else watchers.push(w);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', () => live.delete(child));
  return {
    child,
    log: () => stderr,
    logged: (re) =>
      re.test(stderr)
        ? Promise.resolve()
        : Promise.race([
            new Promise<void>((resolve) => watchers.push({ re, resolve })),
            exited.then(() => assert.fail(`controller exited before logging ${re}:\n${stderr}`)),
          ]),
    kill: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

async function waitFor(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out after ${ms} ms waiting for ${what}`);
}

/** Registers names[from…to) with 16 writes in flight. */
async function register(store: Store, names: readonly string[], from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < to) await addNode(store, { name: names[next++] as string });
    }),
  );
}

async function assignedCount(store: Store): Promise<number> {
  return (await listNodes(store)).filter((n) => n.record.podCIDRs.length === 2).length;
}

/** Every node: one CIDR per family, inside the cluster CIDRs, none shared; claims match records. */
async function assertOneCidrPerFamilyNoOverlap(store: Store, count: number): Promise<void> {
  const nodes = await listNodes(store);
  assert.equal(nodes.length, count);
  const all = [];
  for (const { record } of nodes) {
    const [v4, v6] = record.podCIDRs.map((c) => parsePrefix(c));
    assert.equal(record.podCIDRs.length, 2, `${record.name}: ${record.podCIDRs.join(',')}`);
    assert.ok(v4 && v4.family === 4 && v4.len === 24 && prefixContainsPrefix(parsePrefix(CLUSTER[0] as string), v4), `${record.name} v4`);
    assert.ok(v6 && v6.family === 6 && v6.len === 64 && prefixContainsPrefix(parsePrefix(CLUSTER[1] as string), v6), `${record.name} v6`);
    all.push({ name: record.name, p: v4 }, { name: record.name, p: v6 });
  }
  // Same-size aligned blocks overlap only when equal; sorting makes the check linear.
  all.sort((a, b) => a.p.family - b.p.family || (a.p.base < b.p.base ? -1 : a.p.base > b.p.base ? 1 : 0));
  for (let i = 1; i < all.length; i++) {
    const [a, b] = [all[i - 1]!, all[i]!];
    assert.ok(!prefixOverlaps(a.p, b.p), `${a.name} and ${b.name} share a CIDR`);
  }
  const claims = await store.list(NODE_CIDR_CLAIM_PREFIX);
  assert.equal(claims.length, 2 * count);
  const byNode = new Map(nodes.map((n) => [n.record.name, n.record.podCIDRs]));
  for (const c of claims) {
    const owner = decodeNodeCidrClaim(c.value) as string;
    assert.ok(byNode.get(owner)?.includes(c.key.slice(NODE_CIDR_CLAIM_PREFIX.length)), `claim ${c.key} → ${owner}`);
  }
}

test('controller killed with SIGKILL while 1,000 nodes register, then restarted: one CIDR per family each, none shared', async (t) => {
  const etcd = await startEtcd();
  const store = await openStore(etcd.url);
  let ctl = startController(etcd.url);
  try {
    const names = Array.from({ length: 1000 }, (_, i) => `node-${String(i).padStart(4, '0')}`);
    await register(store, names, 0, 300);
    await waitFor('the controller to assign 100 nodes', async () => (await assignedCount(store)) >= 100, 30_000);
    const rest = register(store, names, 300, 1000);
    // Killed once it serves the second batch (an event, not a sleep): node-03xx are its first.
    await ctl.logged(/ assigned node=node-03\d\d /);
    await ctl.kill('SIGKILL');
    await rest;
    const before = await assignedCount(store);
    assert.ok(before < 1000, `the kill landed before every node was served (${before})`);
    t.diagnostic(`${before} of 1000 nodes had CIDRs when the controller was killed`);
    // Once more while the restarted controller works through the backlog.
    ctl = startController(etcd.url);
    // Killed the moment its first write lands, with more batches in flight.
    await ctl.logged(/ assigned node=/);
    await ctl.kill('SIGKILL');
    t.diagnostic(`${await assignedCount(store)} of 1000 nodes had CIDRs at the second kill`);
    ctl = startController(etcd.url);
    await waitFor('all 1,000 nodes to have two CIDRs', async () => (await assignedCount(store)) === 1000, 60_000);
    await assertOneCidrPerFamilyNoOverlap(store, 1000);
    assert.doesNotMatch(ctl.log(), /CIDRNotAvailable|CIDRAssignmentFailed/);
  } finally {
    await ctl.kill('SIGKILL');
    await store.close();
    await etcd.stop();
  }
});

test('two controllers racing on one etcd never give a CIDR twice', async (t) => {
  const etcd = await startEtcd();
  const store = await openStore(etcd.url);
  const ctls = [startController(etcd.url), startController(etcd.url)];
  try {
    await waitFor('both controllers to be ready', async () => ctls.every((c) => / ready: /.test(c.log())), 30_000);
    // Nodes trickle in while both poll, so each sees new nodes and proposes the same blocks.
    const names = Array.from({ length: 500 }, (_, i) => `race-${i}`);
    for (let i = 0; i < 500; i += 20) {
      await register(store, names, i, i + 20);
      await new Promise((r) => setTimeout(r, 40));
    }
    await waitFor('all 500 nodes to have two CIDRs', async () => (await assignedCount(store)) === 500, 60_000);
    await assertOneCidrPerFamilyNoOverlap(store, 500);
    const counts = ctls.map((c) => (c.log().match(/ assigned node=/g) ?? []).length);
    t.diagnostic(`assignments per controller: ${counts.join(', ')}`);
    assert.equal(counts[0]! + counts[1]!, 500, `assignments per controller: ${counts.join(', ')}`);
    assert.ok(
      counts.every((n) => n > 0),
      `both controllers assigned nodes: ${counts.join(', ')}`,
    );
  } finally {
    await Promise.all(ctls.map((c) => c.kill('SIGTERM')));
    await store.close();
    await etcd.stop();
  }
});

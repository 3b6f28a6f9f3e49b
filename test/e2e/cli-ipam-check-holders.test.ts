/**
 * `ipam check` compares every holder, through the built binaries on a real SQLite file: a warm
 * agent (`podipam agent`, its holder view published every 200 ms when it changes) serves pods
 * through the shim; the check reports nothing on that consistent state. Then, planted directly
 * in the datastore as a faulty writer would: the block of a served pod's address frees it (and
 * its warm handle counts one less) → exactly one `pod-unbacked` finding naming the node, the
 * pod, its container id and the address, exit 1; put back, clean again. One of the agent's idle
 * addresses given to another pod's handle (with its handle record, counts kept right, so the
 * block scan sees nothing): the agent withdraws it, and until its view says so the check lists it
 * only as `unsettled` (idle-held-elsewhere), never as a finding. The same with the planted bug
 * `warm-trust-blind` (the agent's watch of its handles sees nothing, so it keeps the address
 * idle): once the agent's view is newer than the change, the check reports it as an
 * `idle-held-elsewhere` finding naming the node, the address and the other holder, exit 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { podCall, untilStatus } from '../helpers/agent-pods.js';
import { runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli } from './serve-harness.js';
import { openStore, type Store } from '../../src/store/index.js';
import { BLOCK_PREFIX, handleKey } from '../../src/cluster/records/keys.js';
import { decodeBlock, encodeBlock } from '../../src/cluster/records/block-record.js';
import { decodeHandle, encodeHandle } from '../../src/cluster/records/handle-record.js';
import { agentViewKey, decodeAgentView } from '../../src/cluster/records/agent-view-record.js';
import { ordinalOf, type Block } from '../../src/alloc/block.js';
import { formatPrefix, parseAddr, prefixContains } from '../../src/ip/index.js';

interface CheckJson {
  leaks: unknown[];
  problems: unknown[];
  holders?: {
    kind: string;
    node: string;
    address: string;
    claim: { as: string; pod?: string; containerId?: string; holder?: string; from: string[] };
    other?: { holder?: string; pod?: string };
  }[];
  unsettled?: { kind: string; node: string; address: string; reason: string }[];
}

test(
  "ipam check: an agent's pods and idle addresses compared with the datastore; a planted second holder is reported with node, pod and address",
  { timeout: 240_000 },
  () => scenario(false),
);

test(
  "ipam check with the agent's handle watch blind (planted bug): an idle address the datastore gives another pod is a finding, exit 1",
  { timeout: 240_000 },
  () => scenario(true),
);

async function scenario(blind: boolean): Promise<void> {
  requireShim();
  const dir = makeTempDir('check-holders');
  let agent: RunningAgent | undefined;
  const url = `sqlite:${join(dir.path, 'c.db')}`;
  const withStore = async <T>(fn: (s: Store) => Promise<T>): Promise<T> => {
    const s = await openStore(url);
    try {
      return await fn(s);
    } finally {
      await s.close();
    }
  };
  const check = async (): Promise<{ code: number | null; json: CheckJson }> => {
    const r = await runCli(['--datastore', url, 'ipam', 'check', '--json']);
    return { code: r.code, json: JSON.parse(r.stdout) as CheckJson };
  };
  /** Polls the check until `ok`; every answer meanwhile must be `allowed` (never a false finding). */
  const untilCheck = async (
    what: string,
    ok: (c: { code: number | null; json: CheckJson }) => boolean,
    allowed: (c: { code: number | null; json: CheckJson }) => boolean,
  ): Promise<CheckJson> => {
    for (let i = 0; ; i++) {
      const c = await check();
      if (ok(c)) return c.json;
      assert.ok(allowed(c), `${what}: unexpected answer ${JSON.stringify(c)}`);
      assert.ok(i < 60, `${what}: not reached; last ${JSON.stringify(c)}\n${agent?.log() ?? ''}`);
      await sleep(250);
    }
  };
  try {
    const created = await runCli(['--datastore', url, 'pool', 'create', 'a', '--cidr', '10.240.0.0/24', '--block-size', '28']);
    assert.equal(created.code, 0, created.stderr);
    const socket = join(dir.path, 'agent.sock');
    agent = await startAgent(
      socket,
      [
        '--node',
        'node-a',
        '--datastore',
        url,
        '--data-dir',
        join(dir.path, 'data'),
        '--min-idle',
        '4',
        '--max-idle',
        '8',
        '--capacity',
        '64',
        '--view-interval',
        '200ms',
      ],
      blind ? { PODIPAM_PLANT_BUG: 'warm-trust-blind', PODIPAM_TEST_HOOKS: '1' } : {},
    );
    const a = agent;
    const add = async (pod: string): Promise<string> => {
      const r = await runPlugin(SHIM_BIN, podCall(socket, 'check-net', 'ADD', `c-${pod}`, 'ns', pod, `uid-${pod}`));
      assert.equal(r.code, 0, `ADD ${pod}: ${r.stdout}${r.stderr}`);
      return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    };
    const web = await add('web');
    await add('db');
    await untilStatus(
      a,
      'refilled, records written',
      (s) => (s.warmPool?.pools.ipv4?.idle ?? 0) >= 4 && s.warmPool!.pools.ipv4!.pending === 0 && s.warmPool!.writeBehindDepth === 0,
    );

    // Consistent: the view lists both pods and the idle addresses; nothing found, nothing unsettled.
    const view = await untilView(withStore, (v) => v.pods.length === 2 && v.idle.length >= 4 && v.pending === 0);
    const clean = (c: { code: number | null; json: CheckJson }): boolean =>
      c.code === 0 && c.json.holders === undefined && c.json.unsettled === undefined && c.json.leaks.length === 0 && c.json.problems.length === 0;
    await untilCheck('consistent', clean, (c) => c.code === 0);

    // Planted: web's address freed in its block (a faulty release), its warm handle counting one less.
    const restore = await withStore((s) => reassign(s, web, undefined));
    const unbacked = await untilCheck(
      'pod-unbacked found',
      (c) => c.code === 1 && (c.json.holders ?? []).length > 0,
      (c) => c.code === 0 && (c.json.unsettled ?? []).every((u) => u.address === web),
    );
    assert.deepEqual(unbacked.leaks, []);
    assert.deepEqual(unbacked.problems, []);
    assert.deepEqual(
      (unbacked.holders ?? []).map((h) => [h.kind, h.node, h.address, h.claim.as, h.claim.pod, h.claim.containerId, h.claim.holder, [...h.claim.from].sort()]),
      [['pod-unbacked', 'node-a', web, 'pod', 'ns/web', 'c-web', 'check-net:c-web:eth0', ['agent-view', 'pod-record']]],
    );
    await withStore(restore);
    await untilCheck('clean again', clean, (c) => c.code === 0 || (c.code === 1 && (c.json.holders ?? []).every((h) => h.address === web)));

    // Planted: an idle address given to another pod's handle in the same block. The agent's
    // datastore watch withdraws it from its idle queue within seconds; meanwhile and after, the
    // check never counts a second holder the agent has not seen yet, and ends clean.
    const idle = view.idle[0]!;
    await withStore((s) => reassign(s, idle, { handle: 'other-net:c-thief:eth0', node: 'node-b', namespace: 'ns', pod: 'thief', containerId: 'c-thief' }));
    const unsettledOnly = (c: { code: number | null; json: CheckJson }): boolean =>
      c.code === 0 && (c.json.unsettled ?? []).every((u) => u.address === idle && u.kind === 'idle-held-elsewhere');
    if (!blind) {
      await untilView(withStore, (v) => !v.idle.includes(idle) && !v.cooling.includes(idle));
      await untilCheck('withdrawn: clean', clean, unsettledOnly);
      return;
    }
    // Blind: the agent keeps it idle; once its view is newer than the change, that is a finding.
    const found = await untilCheck('idle-held-elsewhere found', (c) => c.code === 1 && (c.json.holders ?? []).length > 0, unsettledOnly);
    assert.deepEqual(
      (found.holders ?? []).map((h) => [h.kind, h.node, h.address, h.claim.as, h.other?.holder, h.other?.pod]),
      [['idle-held-elsewhere', 'node-a', idle, 'idle', 'other-net:c-thief:eth0', 'ns/thief']],
    );
  } finally {
    await agent?.stop();
    dir.remove();
  }
}

/** Polls the agent's published view until `ok`. */
async function untilView(
  withStore: <T>(fn: (s: Store) => Promise<T>) => Promise<T>,
  ok: (v: ReturnType<typeof decodeAgentView>) => boolean,
): Promise<ReturnType<typeof decodeAgentView>> {
  for (let i = 0; ; i++) {
    const e = await withStore((s) => s.get(agentViewKey('node-a')));
    const v = e && decodeAgentView(e);
    if (v && ok(v)) return v;
    assert.ok(i < 100, `the agent's view: ${JSON.stringify(v)}`);
    await sleep(100);
  }
}

/**
 * Gives `addr` to `to` (undefined: to no one) in its block, keeping the handle records' counts
 * right, in one txn. Returns the write that puts the block and handle back as they were.
 */
async function reassign(
  s: Store,
  addr: string,
  to: { handle: string; node: string; namespace: string; pod: string; containerId: string } | undefined,
): Promise<(s: Store) => Promise<void>> {
  const a = parseAddr(addr);
  const blocks = (await s.list(BLOCK_PREFIX)).map((e) => ({ e, b: decodeBlock(e) }));
  const found = blocks.find(({ b }) => prefixContains(b.cidr, a));
  assert.ok(found, `no block holds ${addr}`);
  const { e: be, b } = found;
  const o = ordinalOf(b.cidr, a);
  const was = b.allocations.get(o);
  assert.ok(was, `${addr} is not allocated`);
  const he = (await s.get(handleKey(was)))!;
  const h = decodeHandle(he);
  const cidr = formatPrefix(b.cidr);
  const allocations = new Map(b.allocations);
  if (to) allocations.set(o, to.handle);
  else allocations.delete(o);
  const next: Block = { ...b, allocations };
  const counts = new Map(h.blocks);
  counts.set(cidr, (counts.get(cidr) ?? 0) - 1);
  const ops = [
    { type: 'put' as const, key: be.key, value: encodeBlock(next) },
    { type: 'put' as const, key: he.key, value: encodeHandle({ ...h, blocks: counts }) },
    ...(to
      ? [
          {
            type: 'put' as const,
            key: handleKey(to.handle),
            value: encodeHandle({ node: to.node, namespace: to.namespace, pod: to.pod, containerId: to.containerId, blocks: new Map([[cidr, 1]]) }),
          },
        ]
      : []),
  ];
  const r = await s.txn([], ops);
  assert.ok(r.succeeded);
  return async (st: Store) => {
    const now = decodeBlock((await st.get(be.key))!);
    const hNow = decodeHandle((await st.get(he.key))!);
    const back = new Map(now.allocations);
    back.set(o, was);
    const c = new Map(hNow.blocks);
    c.set(cidr, (c.get(cidr) ?? 0) + 1);
    const r2 = await st.txn(
      [],
      [
        { type: 'put', key: be.key, value: encodeBlock({ ...now, allocations: back }) },
        { type: 'put', key: he.key, value: encodeHandle({ ...hNow, blocks: c }) },
      ],
    );
    assert.ok(r2.succeeded);
  };
}

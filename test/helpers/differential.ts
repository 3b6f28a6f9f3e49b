/**
 * The host-local differential machinery (scenarios, random ADD/DEL/CHECK sequences, directory
 * snapshots, outcome comparison), shared by the per-pod plugin's and the shim + agent's
 * differential tests. Re-run a failure with PODIPAM_SEED=<printed seed>.
 */
import assert from 'node:assert/strict';
import { lstatSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOST_LOCAL_BIN, PODIPAM_BIN, type PluginCall, type PluginRun, runPlugin, runPluginSync } from './plugin.js';
import { makeTempDir } from './tmp.js';
import { mulberry32 } from '../../src/util/mulberry32.js';

/** The binary under test and its environment (the per-pod plugin, or the shim with its agent). */
export interface Subject {
  readonly bin: string;
  readonly env?: Readonly<Record<string, string>>;
}

export const PER_POD: Subject = { bin: PODIPAM_BIN };

export const SEED = Number(process.env.PODIPAM_SEED ?? Math.floor(Math.random() * 2 ** 31));
export const OPS = Number(process.env.PODIPAM_DIFF_OPS ?? 30);

export interface Scenario {
  readonly name: string;
  readonly ipam: Record<string, unknown>;
  /** cniVersions to draw from (host-local 1.1.1 stops at 1.0.0). */
  readonly versions: readonly string[];
  /** Addresses to request specifically: inside, gateways, outside. */
  readonly probes: readonly string[];
}

const MODERN = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.0.0'];
const ALL = [...MODERN, '0.2.0', '0.1.0'];

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'v4',
    ipam: { ranges: [[{ subnet: '10.10.0.0/28' }]], routes: [{ dst: '0.0.0.0/0' }] },
    versions: ALL,
    probes: ['10.10.0.5', '10.10.0.1', '10.10.0.14', '10.10.0.15', '10.99.0.1'],
  },
  {
    name: 'v6',
    ipam: { ranges: [[{ subnet: 'fd10::/125' }]], routes: [{ dst: '::/0', gw: 'fd10::1' }] },
    versions: ALL,
    probes: ['fd10::3', 'fd10::7', 'fd10::1', 'FD10:0:0::6', 'fd99::1'],
  },
  {
    name: 'dual',
    ipam: { ranges: [[{ subnet: '10.11.0.0/29' }], [{ subnet: 'fd11::/125' }]] },
    versions: ALL,
    probes: ['10.11.0.4', 'fd11::5', '10.11.0.1', '10.12.0.1'],
  },
  {
    name: 'bounds',
    ipam: { ranges: [[{ subnet: '192.168.7.0/24', rangeStart: '192.168.7.10', rangeEnd: '192.168.7.17', gateway: '192.168.7.13' }]] },
    versions: MODERN,
    probes: ['192.168.7.11', '192.168.7.13', '192.168.7.9', '192.168.7.17'],
  },
  {
    name: 'multi',
    ipam: {
      ranges: [
        [
          { subnet: '10.30.0.0/24', rangeStart: '10.30.0.10', rangeEnd: '10.30.0.12' },
          { subnet: '10.31.0.0/24', rangeStart: '10.31.0.10', rangeEnd: '10.31.0.11', gateway: '10.31.0.254' },
        ],
        [{ subnet: 'fd30::/120', rangeStart: 'fd30::10', rangeEnd: 'fd30::16' }],
      ],
      routes: [{ dst: '10.0.0.0/8', gw: '10.30.0.1' }, { dst: 'fd00::/8' }],
    },
    versions: MODERN,
    probes: ['10.31.0.11', '10.30.0.10', 'fd30::12', '10.31.0.254', '10.30.0.13'],
  },
  {
    name: 'legacy',
    ipam: { subnet: '10.40.0.0/29', gateway: '10.40.0.6', ranges: [[{ subnet: 'fd40::/126' }]] },
    versions: ALL,
    probes: ['10.40.0.6', '10.40.0.3', 'fd40::3'],
  },
];

/** One state-changing or state-reading call, with everything both plugins need. */
export interface Op {
  readonly command: 'ADD' | 'DEL' | 'CHECK';
  readonly id: string;
  readonly ifname: string;
  readonly version: string;
  readonly args?: string;
  readonly extra?: Record<string, unknown>;
}

export function describe(op: Op): string {
  return `${op.command} ${op.id}/${op.ifname} v${op.version}${op.args ? ` CNI_ARGS=${op.args}` : ''}${op.extra ? ` ${JSON.stringify(op.extra)}` : ''}`;
}

/** Random operations: mostly valid runtime behaviour, plus duplicates, unknown DELs and requests. */
export function* generate(s: Scenario, rnd: () => number, count: number): Generator<Op, void, boolean> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const live: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `ctr${Math.floor(rnd() * 9)}`;
    const ifname = rnd() < 0.8 ? 'eth0' : 'net1';
    const key = `${id}/${ifname}`;
    const version = pick(s.versions);
    const r = rnd();
    let op: Op;
    if (r < 0.4 || live.length === 0) {
      op = { command: 'ADD', id, ifname, version };
    } else if (r < 0.55 && !live.includes(key)) {
      // A specific address, through one of host-local's three channels.
      const ip = pick(s.probes);
      const how = rnd();
      if (how < 0.4) op = { command: 'ADD', id, ifname, version, args: `IgnoreUnknown=1;K8S_POD_NAME=p${i};IP=${ip}` };
      else if (how < 0.7) op = { command: 'ADD', id, ifname, version, extra: { args: { cni: { ips: [ip] } } } };
      else op = { command: 'ADD', id, ifname, version, extra: { runtimeConfig: { ips: [`${ip}/24`] } } };
    } else if (r < 0.85) {
      const [lid, lif] = (rnd() < 0.8 ? pick(live) : key).split('/') as [string, string];
      op = { command: 'DEL', id: lid, ifname: lif, version };
    } else {
      const [lid, lif] = (rnd() < 0.7 ? pick(live) : key).split('/') as [string, string];
      op = { command: 'CHECK', id: lid, ifname: lif, version };
    }
    const ok: boolean = yield op;
    const k = `${op.id}/${op.ifname}`;
    if (ok && op.command === 'ADD' && !live.includes(k)) live.push(k);
    if (ok && op.command === 'DEL' && live.includes(k)) live.splice(live.indexOf(k), 1);
  }
}

export function call(op: Op, s: Scenario, dataDir: string, type: string, subject?: Subject): PluginCall {
  return {
    ...(subject?.env ? { env: subject.env } : {}),
    command: op.command,
    containerId: op.id,
    ifname: op.ifname,
    args: op.args,
    config: { cniVersion: op.version, name: `diff-${s.name}`, type: 'bridge', ipam: { type, dataDir, ...s.ipam }, ...op.extra },
  };
}

/** Names, modes and bytes of every entry of a network directory (empty when missing). */
export function snapshot(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  return names.map((n) => {
    const st = lstatSync(join(dir, n));
    const body = st.isFile() ? readFileSync(join(dir, n)).toString('hex') : '';
    return `${n} ${(st.mode & 0o7777).toString(8)} ${body}`;
  });
}

/** Asserts two runs of the same call agree, as far as the contract asks. */
export function assertSameOutcome(ours: PluginRun, ref: PluginRun, what: string, oursIsPodipam = true): void {
  assert.equal(ours.code === 0, ref.code === 0, `${what}: exit ${ours.code} vs host-local ${ref.code}\n ours: ${ours.stdout}\n ref: ${ref.stdout}`);
  if (ref.code === 0) {
    assert.equal(ours.stdout, ref.stdout, `${what}: stdout differs`);
    return;
  }
  const e = JSON.parse(ours.stdout) as { code: number; msg: string };
  const r = JSON.parse(ref.stdout) as { code: number; msg: string };
  assert.equal(e.msg, r.msg, `${what}: error message differs`);
  if (r.code !== 999) assert.equal(e.code, r.code, `${what}: error code differs`);
  else if (oursIsPodipam) assert.notEqual(e.code, 999, `${what}: podipam should give a spec code, not 999`);
  assert.equal(ours.stderr.includes('    at '), false, `${what}: stack trace on stderr`);
}

/** Runs one scenario's random sequence against both plugins, comparing after every call. */
export async function runScenario(s: Scenario, seed: number, subject: Subject = PER_POD): Promise<void> {
  const ours = makeTempDir(`diff-${s.name}`);
  const ref = makeTempDir(`diff-${s.name}-ref`);
  try {
    const gen = generate(s, mulberry32(seed), OPS);
    const log: string[] = [];
    for (let step = gen.next(true); !step.done;) {
      const op = step.value;
      log.push(describe(op));
      const what = `[${s.name} seed ${SEED} step ${log.length}] ${describe(op)}\n  history: ${log.slice(-8).join(' | ')}`;
      const [a, b] = await Promise.all([
        runPlugin(subject.bin, call(op, s, ours.path, 'podipam', subject)),
        runPlugin(HOST_LOCAL_BIN, call(op, s, ref.path, 'host-local')),
      ]);
      assertSameOutcome(a, b, what);
      assert.deepEqual(snapshot(join(ours.path, `diff-${s.name}`)), snapshot(join(ref.path, `diff-${s.name}`)), `${what}: directories differ`);
      step = gen.next(b.code === 0);
    }
  } finally {
    ours.remove();
    ref.remove();
  }
}

/** Random sequences of every scenario, two at a time, against host-local. */
export async function sequencesAgree(subject: Subject, t: { diagnostic(s: string): void }): Promise<void> {
  t.diagnostic(`seed ${SEED} (replay with PODIPAM_SEED=${SEED}; length with PODIPAM_DIFF_OPS)`);
  console.log(`# differential seed ${SEED}`);
  // Two scenarios at a time (the machine has two cores); each sequence itself is sequential.
  const queue = SCENARIOS.map((s, i) => [s, SEED + i] as const);
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) await runScenario(next[0], next[1], subject);
  };
  await Promise.all([worker(), worker()]);
}

/** The subject and host-local take turns on ONE directory; a host-local-only twin must match it. */
export async function takeTurns(subject: Subject, t: { diagnostic(s: string): void }): Promise<void> {
  const s = SCENARIOS.find((x) => x.name === 'multi')!;
  const shared = makeTempDir('alternate');
  const ref = makeTempDir('alternate-ref');
  const rnd = mulberry32(SEED ^ 0x5eed);
  let turns = 0;
  try {
    const gen = generate(s, rnd, OPS + 12);
    for (let step = gen.next(true); !step.done;) {
      const op = step.value;
      const usePodipam = rnd() < 0.5;
      if (usePodipam) turns++;
      const what = `[alternate seed ${SEED}] ${describe(op)} by ${usePodipam ? 'podipam' : 'host-local'}`;
      const a = usePodipam
        ? runPluginSync(subject.bin, call(op, s, shared.path, 'podipam', subject))
        : runPluginSync(HOST_LOCAL_BIN, call(op, s, shared.path, 'host-local'));
      const b = runPluginSync(HOST_LOCAL_BIN, call(op, s, ref.path, 'host-local'));
      assertSameOutcome(a, b, what, usePodipam);
      assert.deepEqual(snapshot(join(shared.path, 'diff-multi')), snapshot(join(ref.path, 'diff-multi')), `${what}: directories differ`);
      step = gen.next(b.code === 0);
    }
    t.diagnostic(`${turns} of ${OPS + 12} calls by podipam`);
  } finally {
    shared.remove();
    ref.remove();
  }
}

/** Fixed cases from the reference's observed table (§2.7) and bad input, through both binaries. */
export async function tableAgrees(subject: Subject): Promise<void> {
  const ours = makeTempDir('table');
  const ref = makeTempDir('table-ref');
  const base = (dataDir: string, type: string, ipam: Record<string, unknown>, v = '1.0.0') => ({
    cniVersion: v,
    name: 'tbl',
    ipam: { type, dataDir, ...ipam },
  });
  type Case = { readonly name: string; readonly call: (dataDir: string, type: string) => PluginCall; readonly sameMsg?: boolean };
  const add =
    (id: string, ipam: Record<string, unknown>, extra: Partial<PluginCall> = {}, v = '1.0.0'): Case['call'] =>
    (d, ty) => ({ command: 'ADD', containerId: id, ifname: 'eth0', config: base(d, ty, ipam, v), ...extra });
  const cases: Case[] = [
    {
      name: 'missing ipam',
      call: (d) => ({ command: 'ADD', containerId: 'x', ifname: 'eth0', config: { cniVersion: '1.0.0', name: 'tbl', dataDir: d } }),
      sameMsg: true,
    },
    { name: 'empty ranges', call: add('x', { ranges: [] }), sameMsg: true },
    {
      name: 'malformed JSON',
      call: (d, ty) => ({ command: 'ADD', containerId: 'x', ifname: 'eth0', config: `{"name":"tbl","ipam":{"type":"${ty}","dataDir":"${d}"` }),
      sameMsg: true,
    },
    {
      name: 'missing name',
      call: (d, ty) => ({ command: 'ADD', containerId: 'x', ifname: 'eth0', config: { cniVersion: '1.0.0', ipam: { type: ty, dataDir: d } } }),
      sameMsg: true,
    },
    { name: 'bad container id', call: add(' sp ', { ranges: [[{ subnet: '10.1.0.0/24' }]] }), sameMsg: true },
    { name: 'bad ifname', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]] }, { ifname: 'eth0/x' }), sameMsg: true },
    {
      name: 'bad network name',
      call: (d, ty) => ({ command: 'ADD', containerId: 'x', ifname: 'eth0', config: { cniVersion: '1.0.0', name: '../etc', ipam: { type: ty, dataDir: d } } }),
      sameMsg: true,
    },
    { name: 'missing env', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]] }, { env: { CNI_NETNS: undefined, CNI_IFNAME: undefined } }), sameMsg: true },
    {
      name: 'CHECK at 0.3.1',
      call: (d, ty) => ({ command: 'CHECK', containerId: 'x', ifname: 'eth0', config: base(d, ty, { ranges: [[{ subnet: '10.1.0.0/24' }]] }, '0.3.1') }),
      sameMsg: true,
    },
    { name: 'unknown version', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]] }, {}, '0.9.0'), sameMsg: true },
    { name: '/31', call: add('x', { ranges: [[{ subnet: '10.9.0.0/31' }]] }), sameMsg: true },
    { name: 'host bits', call: add('x', { ranges: [[{ subnet: '10.9.0.5/24' }]] }), sameMsg: true },
    { name: 'mixed families', call: add('x', { ranges: [[{ subnet: '10.9.0.0/24' }, { subnet: 'fd00::/64' }]] }), sameMsg: true },
    { name: 'overlapping sets', call: add('x', { ranges: [[{ subnet: '10.9.0.0/24' }], [{ subnet: '10.9.0.0/25' }]] }), sameMsg: true },
    { name: 'overlapping ranges', call: add('x', { ranges: [[{ subnet: '10.9.0.0/24' }, { subnet: '10.9.0.0/25' }]] }), sameMsg: true },
    { name: 'range outside subnet', call: add('x', { ranges: [[{ subnet: '10.9.0.0/24', rangeStart: '10.8.0.1' }]] }), sameMsg: true },
    { name: 'two v4 sets at 0.2.0', call: add('x', { ranges: [[{ subnet: '10.9.0.0/24' }], [{ subnet: '10.8.0.0/24' }]] }, {}, '0.2.0'), sameMsg: true },
    { name: 'unknown CNI_ARGS', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]] }, { args: 'K8S_POD_NAME=foo;IP=10.1.0.9' }), sameMsg: true },
    { name: 'lower-case ip arg', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]] }, { args: 'ip=10.1.0.9' }), sameMsg: true },
    { name: 'bad CIDR', call: add('x', { ranges: [[{ subnet: 'foo' }]] }) },
    { name: 'ill-typed dataDir', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]], dataDir: 5 }) },
    { name: 'bad requested ip', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]] }, { args: 'IP=zzz' }) },
    { name: 'missing resolvConf', call: add('x', { ranges: [[{ subnet: '10.1.0.0/24' }]], resolvConf: '/nonexistent/resolv.conf' }), sameMsg: true },
    {
      name: 'ok, no cniVersion',
      call: (d, ty) => ({
        command: 'ADD',
        containerId: 'nov',
        ifname: 'eth0',
        config: { name: 'tbl', ipam: { type: ty, dataDir: d, ranges: [[{ subnet: '10.1.0.0/24' }]] } },
      }),
    },
    {
      name: 'ok, prevResult ignored',
      call: (d, ty) => ({
        command: 'ADD',
        containerId: 'prev',
        ifname: 'eth0',
        config: { ...base(d, ty, { ranges: [[{ subnet: '10.1.0.0/24' }]] }), prevResult: { cniVersion: '1.0.0', ips: [{ address: '10.1.0.77/24' }] } },
      }),
    },
    {
      name: 'ok, runtime ipRanges first',
      call: (d, ty) => ({
        command: 'ADD',
        containerId: 'rt',
        ifname: 'eth0',
        config: { ...base(d, ty, { subnet: '10.61.0.0/24' }), runtimeConfig: { ipRanges: [[{ subnet: '10.60.0.0/24' }]] } },
      }),
    },
    {
      name: 'ok, routes re-printed',
      call: add('rts', { ranges: [[{ subnet: '10.1.0.0/24' }]], routes: [{ dst: '10.1.2.3/8', gw: '10.1.0.1' }, { dst: '0:0::0/0' }] }),
    },
    {
      name: 'ok, gateway + resolvConf',
      call: add('dns', { ranges: [[{ subnet: '10.20.0.0/24', gateway: '10.20.0.254' }]], resolvConf: join(ours.path, 'resolv.conf') }),
    },
    {
      name: 'ok, ADD 0.2.0 dual',
      call: add('old', { ranges: [[{ subnet: '10.70.0.0/24' }], [{ subnet: 'fd70::/64' }]], routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }] }, {}, '0.2.0'),
    },
  ];
  writeFileSync(
    join(ours.path, 'resolv.conf'),
    '# test\n; also a comment\nnameserver 10.20.0.53\nnameserver fd20::53 ignored\ndomain example.org\nsearch a.example.org b.example.org\noptions ndots:5 timeout:1\noptions <x>&y\n',
  );
  try {
    for (const c of cases) {
      const own = c.call(ours.path, 'podipam');
      const a = runPluginSync(subject.bin, subject.env ? { ...own, env: { ...subject.env, ...own.env } } : own);
      const b = runPluginSync(HOST_LOCAL_BIN, c.call(ref.path, 'host-local'));
      assert.equal(a.code === 0, b.code === 0, `${c.name}: exit ${a.code} vs ${b.code}: ${a.stdout} / ${b.stdout}`);
      if (b.code === 0) {
        assert.equal(a.stdout, b.stdout, `${c.name}: stdout`);
        continue;
      }
      const e = JSON.parse(a.stdout);
      const r = JSON.parse(b.stdout);
      assert.notEqual(e.code, 999, `${c.name}: ${a.stdout}`);
      if (r.code !== 999) assert.equal(e.code, r.code, `${c.name}: code`);
      if (c.sameMsg) assert.equal(e.msg, r.msg, `${c.name}: msg`);
      assert.equal(a.stderr, '', `${c.name}: stderr ${a.stderr}`);
    }
    assert.deepEqual(snapshot(join(ours.path, 'tbl')), snapshot(join(ref.path, 'tbl')));
  } finally {
    ours.remove();
    ref.remove();
  }
}

/**
 * Fuzzing of the node's two process boundaries, with real processes: a live `podipam agent`
 * fed random bytes and damaged frames on its socket, and the native shim
 * (dist/bin/podipam-cni) run with random stdin and environment, through that agent and
 * without one (its standalone fallback runs the Node.js plugin). The agent answers each
 * connection with an answer frame or closes it, within its bound, and stays up (status
 * answers, no stack trace in its log); the shim exits 0 or 1 within its bound, stdout a
 * result or the CNI error JSON with a classified code and a message, stderr without a stack
 * trace. Seeds printed; see test/helpers/fuzz.ts to replay.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { answerReader, encodeRequest } from '../../src/wire/frame.js';
import { SHIM_BIN, requireShim, startAgent, type RunningAgent } from '../helpers/agent.js';
import { anyBytes, anyText, bounded, checkCniAnswer, fc, fuzz, mutateAt, oddValue, pathsOf } from '../helpers/fuzz.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';

const FILE = 'agent-shim-fuzz';
let tmp: TempDir;
let agent: RunningAgent;
before(async () => {
  requireShim();
  tmp = makeTempDir('agent-fuzz');
  agent = await startAgent(join(tmp.path, 'agent.sock'));
});
after(async () => {
  await agent?.stop();
  tmp?.remove();
});

/** Sends `bytes` on a fresh connection, half-closes, and collects what comes back until the agent closes. */
function sendRaw(bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect(agent.socket);
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? resolve(Buffer.concat(chunks)) : reject(e)));
    s.on('close', () => resolve(Buffer.concat(chunks)));
    s.end(bytes);
  });
}

const localConf = (): Record<string, unknown> => ({
  cniVersion: '1.1.0',
  name: 'fuzznet',
  type: 'bridge',
  ipam: { type: 'podipam', ranges: [[{ subnet: '10.91.0.0/24' }], [{ subnet: 'fd00:91::/120' }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: '' },
});

/** The data directory is ours whatever the mutation did (nothing written elsewhere). */
function pinned(conf: unknown): unknown {
  if (conf === null || typeof conf !== 'object' || Array.isArray(conf)) return conf;
  const ipam = (conf as Record<string, unknown>).ipam;
  if (ipam === null || typeof ipam !== 'object' || Array.isArray(ipam)) return conf;
  const o = ipam as Record<string, unknown>;
  for (const k of Object.keys(o)) if (['datadir', 'datastore', 'cachedir', 'agent'].includes(k.toLowerCase())) delete o[k];
  o.dataDir = join(tmp.path, 'data');
  return conf;
}

const base = localConf();
const stdinArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.record({ path: fc.constantFrom(...pathsOf(base)), value: oddValue() }), { maxLength: 2 })
      .map((ms) => Buffer.from(JSON.stringify(pinned(ms.reduce<unknown>((t, m) => mutateAt(t, m.path, { kind: 'set', value: m.value }), base))))),
  },
  { weight: 1, arbitrary: anyBytes(200) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(pinned(v)))) },
);
const envArb = fc.record({
  CNI_COMMAND: fc.oneof({ weight: 6, arbitrary: fc.constantFrom('ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION') }, anyText(6)),
  CNI_CONTAINERID: fc.oneof({ weight: 9, arbitrary: fc.stringMatching(/^[a-f0-9]{6,20}$/) }, anyText(20)),
  CNI_IFNAME: fc.oneof({ weight: 9, arbitrary: fc.constant('eth0') }, anyText(16)),
  CNI_NETNS: fc.oneof({ weight: 9, arbitrary: fc.constant('/var/run/netns/x') }, fc.constant('')),
  CNI_PATH: fc.constant('/opt/cni/bin'),
  CNI_ARGS: fc.oneof({ weight: 8, arbitrary: fc.constant('') }, fc.constantFrom('IgnoreUnknown=1;K8S_POD_NAME=p', 'IP=10.91.0.9', '=;;='), anyText(30)),
  EXTRA: fc.option(
    fc.tuple(
      fc.oneof(fc.constantFrom('PODIPAM_SHIM_TIMEOUT_MS', 'PODIPAM_LOCK_TIMEOUT_MS', 'NODENAME', 'PODIPAM_CNI_LOG_X'), fc.stringMatching(/^[A-Z_]{1,12}$/)),
      anyText(12),
    ),
    { nil: undefined },
  ),
});

/** Environment strings as a process holds them: bytes without NUL (a lone surrogate becomes U+FFFD). */
const envText = (s: string): string => Buffer.from(s, 'utf8').toString('utf8').replace(/\0/g, '');

function runShim(env: Record<string, string>, stdin: Buffer): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(SHIM_BIN, [], { env: { PATH: process.env.PATH, ...env }, input: stdin, encoding: 'utf8', timeout: 30_000 });
  const error: NodeJS.ErrnoException | undefined = r.error;
  const epipe = error?.code === 'EPIPE' && r.status !== null;
  if (r.error && !epipe) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function shimCase([e, stdin]: [fc.RecordValue<Record<string, unknown>>, Buffer], extra: Record<string, string>): Promise<void> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(e)) if (k !== 'EXTRA' && typeof v === 'string') env[k] = envText(v);
  const x = e.EXTRA as [string, string] | undefined;
  // The shim's own timeout stays generous: a fuzzed value must not make a slow machine look like a hang.
  if (x && x[0] !== 'PODIPAM_SHIM_TIMEOUT_MS') env[x[0]] = envText(x[1]);
  Object.assign(env, extra);
  const r = runShim(env, stdin);
  const what = `${JSON.stringify(env)} stdin ${JSON.stringify(stdin.toString('utf8').slice(0, 200))}`;
  assert.ok(r.code === 0 || r.code === 1, `${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  assert.doesNotMatch(r.stderr, /^\s+at |node:internal|Error: .*\n\s+at /m, `${what}: no stack trace on stderr: ${r.stderr}`);
  const err = checkCniAnswer({ status: r.code, output: r.stdout }, env.CNI_COMMAND);
  const k = `${env.CNI_COMMAND}:${err?.code ?? 'ok'}`;
  shimOutcomes.set(k, (shimOutcomes.get(k) ?? 0) + 1);
}

const shimOutcomes = new Map<string, number>();
/** Prints the outcomes of a run and requires that some verbs besides VERSION succeeded (the cases reach the back end). */
function endShimRun(t: { diagnostic(m: string): void }): void {
  const line = [...shimOutcomes]
    .filter(([k]) => /^(ADD|DEL|CHECK|GC|STATUS|VERSION):/.test(k))
    .sort()
    .map(([k, n]) => `${k}=${n}`)
    .join(' ');
  t.diagnostic(`outcomes: ${line}`);
  console.log(`shim fuzz outcomes: ${line}`);
  const ok = [...shimOutcomes].filter(([k]) => /^(ADD|DEL|CHECK|GC|STATUS):ok$/.test(k)).reduce((n, [, v]) => n + v, 0);
  shimOutcomes.clear();
  assert.ok(ok > 0, 'some calls besides VERSION succeeded');
}

test('fuzz the live agent socket: random bytes and damaged frames get an answer frame or a close, and the agent stays up', { timeout: 180_000 }, async (t) => {
  const valid = encodeRequest({ kind: 'cni', call: { env: { CNI_COMMAND: 'VERSION' }, stdin: Buffer.from('{}') } });
  const bytesArb = fc.oneof(
    anyBytes(300),
    fc.tuple(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 3 }), fc.nat()).map(([flips, cut]) => {
      const b = Buffer.from(valid);
      for (const [p, v] of flips) b[p % b.length] = v;
      return b.subarray(0, b.length - (cut % 8));
    }),
    anyBytes(64).map((b) => Buffer.concat([Buffer.from('PDPM\0\0\0\x01\0\0\0\x01'), b])),
  );
  let answered = 0;
  await fuzz(t, { runs: 300, file: FILE }, bytesArb, async (bytes) => {
    const back = await bounded('agent answer or close', 15_000, sendRaw(bytes));
    if (back.length > 0) {
      const a = answerReader().push(back);
      assert.ok(a, `a complete answer frame: ${back.subarray(0, 64).toString('hex')}`);
      answered++;
    }
  });
  t.diagnostic(`${answered} connections answered with a frame, the others closed`);
  const status = await agent.status();
  assert.equal(typeof status, 'object');
  assert.equal(agent.child.exitCode, null, 'the agent is still running');
  assert.doesNotMatch(agent.log(), /^\s+at /m, 'no stack trace in the agent log');
});

test('fuzz the shim through the live agent: random stdin and environment', { timeout: 180_000 }, async (t) => {
  await fuzz(t, { runs: 200, file: FILE }, fc.tuple(envArb, stdinArb), (c) => shimCase(c as never, { PODIPAM_AGENT_SOCKET: agent.socket, PODIPAM_PLUGIN: '' }));
  endShimRun(t);
});

test('fuzz the shim without an agent (its standalone fallback): random stdin and environment', { timeout: 180_000 }, async (t) => {
  await fuzz(t, { runs: 60, file: FILE }, fc.tuple(envArb, stdinArb), (c) => shimCase(c as never, { PODIPAM_AGENT_SOCKET: join(tmp.path, 'no-agent.sock') }));
  endShimRun(t);
});

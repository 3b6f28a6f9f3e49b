/**
 * The native shim (dist/bin/podipam-cni) on its own: VERSION without an agent, no agent (code 11
 * naming the socket, or the standalone fallback), agents that misbehave (accept and never
 * answer, die mid-answer, answer garbage, run as another uid), oversized stdin, and the
 * agent's own peer-uid check and socket modes. Fake agents here are plain sockets written for
 * the test; the real one is `podipam agent`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { type Server, type Socket, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, type PluginCall, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

const dir = makeTempDir('shim');
const NOBODY = 65534;

before(() => requireShim());
after(() => dir.remove());

const localCall = (id: string, extraIpam: Record<string, unknown> = {}, env: Record<string, string | undefined> = {}): PluginCall => ({
  command: 'ADD',
  containerId: id,
  ifname: 'eth0',
  config: {
    cniVersion: '1.0.0',
    name: 'shimnet',
    ipam: { type: 'podipam', dataDir: join(dir.path, 'data'), ranges: [[{ subnet: '10.77.0.0/24' }]], ...extraIpam },
  },
  env,
});

const errOf = (stdout: string): { code: number; msg: string } => JSON.parse(stdout) as { code: number; msg: string };

/** A fake agent: `onConn` decides what it does with each connection. */
async function fakeAgent(name: string, onConn: (s: Socket) => void): Promise<{ path: string; server: Server }> {
  const path = join(dir.path, `${name}.sock`);
  const server = createServer((s) => {
    s.on('error', () => {}); // the shim hangs up on what it refuses
    onConn(s);
  });
  await new Promise<void>((r) => server.listen(path, r));
  return { path, server };
}

/** The program headers' types of a 64-bit little-endian ELF executable. */
function programHeaderTypes(elf: Buffer): number[] {
  assert.equal(elf.subarray(0, 4).toString('latin1'), '\x7fELF', 'an ELF file');
  assert.equal(elf[4], 2, 'a 64-bit ELF file');
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  return Array.from({ length: phnum }, (_, i) => elf.readUInt32LE(phoff + i * phentsize));
}

test('the shim is a static executable linked with musl: no program interpreter, no glibc (it starts ~0.3 ms sooner)', () => {
  const musl = spawnSync('sh', ['-c', 'command -v musl-gcc'], { encoding: 'utf8' });
  assert.equal(musl.status, 0, "musl-gcc is missing: scripts/install-test-deps.sh installs Debian's musl-tools (npm run build then links the shim with musl)");
  const elf = readFileSync(SHIM_BIN);
  const PT_INTERP = 3;
  assert.ok(!programHeaderTypes(elf).includes(PT_INTERP), `${SHIM_BIN} names a program interpreter: not static`);
  assert.equal(elf.indexOf('GLIBC'), -1, `${SHIM_BIN} holds glibc's marks: built without musl-gcc (scripts/shim-cc.mjs)`);
});

test('VERSION answers without any agent, exactly as the plugin does', () => {
  const a = runPluginSync(SHIM_BIN, { command: 'VERSION', env: { PODIPAM_AGENT_SOCKET: '/nonexistent/a.sock', PODIPAM_PLUGIN: '' } });
  const b = runPluginSync(PODIPAM_BIN, { command: 'VERSION' });
  assert.equal(a.code, 0);
  assert.equal(a.stdout, b.stdout);
});

test('no agent and no standalone plugin: code 11 naming the socket, at once', () => {
  const sock = join(dir.path, 'none.sock');
  const r = runPluginSync(SHIM_BIN, localCall('c1', {}, { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' }));
  assert.equal(r.code, 1);
  const e = errOf(r.stdout);
  assert.equal(e.code, 11);
  // "At once": the refusal (ENOENT) itself, never the answer timeout; the bound only proves it ends.
  assert.match(e.msg, new RegExp(`${sock}.*No such file`));
  assert.doesNotMatch(e.msg, /did not answer|timed? ?out/i);
  assert.ok(r.ms < 10_000, `${r.ms} ms`);
});

test('failures are appended to $PODIPAM_CNI_LOG, one JSON line each (runtimes drop stderr)', async () => {
  const log = join(dir.path, 'cni.log');
  runPluginSync(SHIM_BIN, localCall('l1', {}, { PODIPAM_AGENT_SOCKET: join(dir.path, 'none.sock'), PODIPAM_PLUGIN: '', PODIPAM_CNI_LOG: log }));
  const agent = await startAgent(join(dir.path, 'logrun', 'agent.sock'));
  try {
    const r = runPluginSync(SHIM_BIN, {
      command: 'ADD',
      containerId: 'l2',
      ifname: 'eth0',
      config: '{"cniVersion":',
      env: { PODIPAM_AGENT_SOCKET: agent.socket, PODIPAM_PLUGIN: '', PODIPAM_CNI_LOG: log },
    });
    assert.equal(errOf(r.stdout).code, 6);
  } finally {
    await agent.stop();
  }
  const lines = readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { command: string; containerId: string; code: number; msg: string });
  assert.equal(lines.length, 2);
  assert.deepEqual([lines[0]!.containerId, lines[0]!.code], ['l1', 11]);
  assert.match(lines[0]!.msg, /none\.sock/);
  assert.deepEqual([lines[1]!.containerId, lines[1]!.code, lines[1]!.command], ['l2', 6, 'ADD']);
});

test('no agent: the standalone fallback runs the TypeScript plugin with the same env and stdin', () => {
  const r = runPluginSync(SHIM_BIN, localCall('c2', {}, { PODIPAM_AGENT_SOCKET: join(dir.path, 'none.sock') }));
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /"address": "10\.77\.0\.\d+\/24"/);
  // ipam.agent names the socket too, and wins over the environment
  const r2 = runPluginSync(SHIM_BIN, localCall('c3', { agent: join(dir.path, 'none2.sock') }, { PODIPAM_PLUGIN: '' }));
  assert.match(errOf(r2.stdout).msg, /none2\.sock/);
});

test('ipam.agent that the shim cannot use as given (relative, escaped) is code 7, never another agent', () => {
  for (const agent of ['run/agent.sock', '/tmp/a\\u0073.sock']) {
    const r = runPluginSync(SHIM_BIN, localCall('r1', { agent }, { PODIPAM_AGENT_SOCKET: join(dir.path, 'none.sock'), PODIPAM_PLUGIN: '' }));
    assert.equal(errOf(r.stdout).code, 7, `${agent}: ${r.stdout}`);
    assert.match(errOf(r.stdout).msg, /ipam\.agent/);
  }
  // duplicate keys: the last one counts, as Go decodes them
  const twice = `{"cniVersion":"1.0.0","name":"shimnet","ipam":{"type":"podipam","agent":"/nonexistent/first.sock","agent":"${join(dir.path, 'second.sock')}"}}`;
  const r = runPluginSync(SHIM_BIN, { command: 'ADD', containerId: 'r2', ifname: 'eth0', config: twice, env: { PODIPAM_PLUGIN: '' } });
  assert.match(errOf(r.stdout).msg, /second\.sock/);
});

test('an agent that accepts and never answers: code 11 after the answer timeout, never a hang', async () => {
  const f = await fakeAgent('silent', () => {});
  try {
    const t0 = Date.now();
    const r = await runAsync(localCall('c4', {}, { PODIPAM_AGENT_SOCKET: f.path, PODIPAM_PLUGIN: '', PODIPAM_SHIM_TIMEOUT_MS: '400' }));
    assert.equal(errOf(r.stdout).code, 11);
    assert.match(errOf(r.stdout).msg, /did not answer within 400 ms/);
    assert.ok(Date.now() - t0 < 10_000);
  } finally {
    f.server.close();
  }
});

test('an agent that dies mid-answer: code 11, no partial answer printed', async () => {
  const f = await fakeAgent('dying', (s) => {
    s.once('data', () => {
      const h = Buffer.alloc(16);
      h.write('PDPM', 0);
      h.writeUInt32BE(1, 4);
      h.writeUInt32BE(0, 8);
      h.writeUInt32BE(100, 12);
      s.write(Buffer.concat([h, Buffer.from('{"cniVersion": "1.0.0", "ips"')]));
      setTimeout(() => s.destroy(), 20);
    });
  });
  try {
    const r = await runAsync(localCall('c5', {}, { PODIPAM_AGENT_SOCKET: f.path, PODIPAM_PLUGIN: '' }));
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.stdout, /"ips"/);
    assert.equal(errOf(r.stdout).code, 11);
    assert.match(errOf(r.stdout).msg, /closed the connection mid-answer/);
  } finally {
    f.server.close();
  }
});

test('an agent that answers garbage: code 11', async () => {
  const f = await fakeAgent('garbage', (s) => s.once('data', () => s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}')));
  try {
    const r = await runAsync(localCall('c6', {}, { PODIPAM_AGENT_SOCKET: f.path, PODIPAM_PLUGIN: '' }));
    assert.equal(errOf(r.stdout).code, 11);
    assert.match(errOf(r.stdout).msg, /garbage/);
  } finally {
    f.server.close();
  }
});

test('oversized stdin: code 7 naming the limit, without waiting for the rest', () => {
  const big = `{"cniVersion":"1.0.0","name":"x","pad":"${'x'.repeat(2 << 20)}"}`;
  const r = runPluginSync(SHIM_BIN, { command: 'ADD', containerId: 'c7', ifname: 'eth0', config: big, env: { PODIPAM_PLUGIN: '' } });
  assert.equal(r.code, 1);
  assert.equal(errOf(r.stdout).code, 7);
  assert.match(errOf(r.stdout).msg, /1048576 bytes/);
});

test('a socket served by another (non-root) uid is refused: it could hand out any address', async () => {
  // Outside the test's 0700 temp dir, so that uid nobody can reach it.
  const d = mkdtempSync(join(tmpdir(), 'podipam-foreign-'));
  chmodSync(d, 0o777);
  const sock = join(d, 'a.sock');
  const script = `require('net').createServer((s)=>s.on('data',()=>{})).listen(${JSON.stringify(sock)}, () => console.log('up'))`;
  const child = spawn(process.execPath, ['-e', script], { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (c) => reject(new Error(`fake agent exited ${c}`)));
    });
    const r = runPluginSync(SHIM_BIN, localCall('c8', {}, { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' }));
    assert.equal(errOf(r.stdout).code, 11);
    assert.match(errOf(r.stdout).msg, new RegExp(`runs as uid ${NOBODY}, not root`));
  } finally {
    child.kill('SIGKILL');
    rmSync(d, { recursive: true, force: true });
  }
});

test('the agent: socket 0600 in a 0700 directory; a caller of another uid cannot connect, and is refused by SO_PEERCRED if it could', async () => {
  const d = join(mkdtempSync(join(tmpdir(), 'podipam-agentdir-')), 'run'); // reachable by uid nobody once loosened
  const agent = await startAgent(join(d, 'agent.sock'));
  try {
    assert.equal(statSync(d).mode & 0o777, 0o700);
    assert.equal(statSync(agent.socket).mode & 0o777, 0o600);
    const asNobody = (env: Record<string, string>) =>
      spawnSync(SHIM_BIN, [], {
        uid: NOBODY,
        gid: NOBODY,
        env: { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c9', CNI_IFNAME: 'eth0', CNI_NETNS: '/x', CNI_PATH: '/usr/lib/cni', PODIPAM_PLUGIN: '', ...env },
        input: JSON.stringify(localCall('c9').config),
        encoding: 'utf8',
      });
    const denied = asNobody({ PODIPAM_AGENT_SOCKET: agent.socket });
    assert.equal(errOf(denied.stdout).code, 5, 'permanent: the socket mode will not change on a retry');
    assert.match(errOf(denied.stdout).msg, /permission denied connecting as uid 65534/);
    // Loosen the modes by hand (a misconfiguration): the agent's own peer check still refuses.
    chmodSync(dirname(d), 0o755);
    chmodSync(d, 0o755);
    chmodSync(agent.socket, 0o666);
    const refused = asNobody({ PODIPAM_AGENT_SOCKET: agent.socket });
    assert.equal(errOf(refused.stdout).code, 4, refused.stdout);
    assert.match(errOf(refused.stdout).msg, new RegExp(`refuses uid ${NOBODY}`));
  } finally {
    await agent.stop();
  }
  // --allow-uid lets that uid in
  const agent2 = await startAgent(join(d, 'agent.sock'), ['--allow-uid', String(NOBODY)]);
  try {
    chmodSync(agent2.socket, 0o666);
    const ok = spawnSync(SHIM_BIN, [], {
      uid: NOBODY,
      gid: NOBODY,
      env: {
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'c10',
        CNI_IFNAME: 'eth0',
        CNI_NETNS: '/x',
        CNI_PATH: '/usr/lib/cni',
        PODIPAM_PLUGIN: '',
        PODIPAM_AGENT_SOCKET: agent2.socket,
      },
      input: JSON.stringify(localCall('c10').config),
      encoding: 'utf8',
    });
    assert.equal(ok.status, 0, ok.stdout);
  } finally {
    await agent2.stop();
    rmSync(dirname(d), { recursive: true, force: true });
  }
});

function runAsync(call: PluginCall): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      PODIPAM_CNI_LOG: '/dev/null',
      CNI_COMMAND: call.command,
      CNI_CONTAINERID: call.containerId,
      CNI_IFNAME: call.ifname,
      CNI_NETNS: '/x',
      CNI_PATH: '/usr/lib/cni',
    };
    for (const [k, v] of Object.entries(call.env ?? {})) if (v !== undefined) env[k] = v;
    const child = spawn(SHIM_BIN, [], { env, stdio: ['pipe', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
    child.stdin.end(JSON.stringify(call.config));
  });
}

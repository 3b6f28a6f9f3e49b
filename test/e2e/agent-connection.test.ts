/**
 * One connection's life at the agent, through the built shim and a real agent: the agent closes
 * the connection as soon as its answer is written (a client that keeps its side open still
 * reads the whole answer, then EOF, and the agent holds nothing), the call is counted all the
 * same; and the trace the per-call bench's breakdown reads (PODIPAM_SHIM_TRACE=1 in the shim,
 * PODIPAM_TRACE=1 in the agent) gives timestamps on one clock across the processes, in the
 * order the call takes them; a request that is not all there when the agent accepts the connection
 * (sent in pieces, or longer than the agent's first read) is read whole, and a bad frame with the
 * client still sending gets its error answer, not a reset.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { type Socket, connect } from 'node:net';
import { join } from 'node:path';
import { answerReader, encodeRequest } from '../../src/wire/frame.js';
import { SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { makeTempDir } from '../helpers/tmp.js';

const dir = makeTempDir('agent-connection');
after(() => dir.remove());

const config = (name: string): string =>
  JSON.stringify({ cniVersion: '1.0.0', name, ipam: { type: 'podipam', dataDir: join(dir.path, 'data'), ranges: [[{ subnet: '10.77.0.0/24' }]] } });

test('the agent closes the connection once its answer is written: a client keeping its side open reads it, then EOF; a later write fails; the call is counted', async () => {
  const agent = await startAgent(join(dir.path, 'close', 'agent.sock'));
  try {
    const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0', CNI_NETNS: '/var/run/netns/x', CNI_PATH: '/usr/lib/cni' };
    const conn = connect({ path: agent.socket, allowHalfOpen: true });
    conn.on('error', () => {}); // asserted below through the write's callback
    const got = answerOn(conn);
    const ended = new Promise<void>((resolve) => conn.once('end', () => resolve()));
    conn.write(encodeRequest({ kind: 'cni', call: { env, stdin: Buffer.from(config('closenet')) } }));
    const a = await got;
    assert.equal(a.status, 0, a.body);
    assert.match(a.body, /10\.77\.0\.2\/24/);
    await ended; // EOF after the answer, though this side never ended its own
    // The agent's end is closed, not half-closed waiting for ours: a write is refused by the kernel.
    const writeErr = await new Promise<NodeJS.ErrnoException | null | undefined>((resolve) => {
      const t = setTimeout(() => resolve(undefined), 3000);
      const again = (n: number): void => {
        conn.write(Buffer.from('x'), (e) => {
          if (e || n === 0) {
            clearTimeout(t);
            resolve(e);
          } else setTimeout(() => again(n - 1), 50);
        });
      };
      again(20);
    });
    conn.destroy();
    assert.ok(
      writeErr && ['EPIPE', 'ECONNRESET'].includes(writeErr.code ?? ''),
      `a write after the answer fails (agent closed), got ${String(writeErr?.code)}`,
    );
    const st = await agent.status();
    assert.equal(st.requests.ADD?.ok, 1, JSON.stringify(st.requests));
  } finally {
    await agent.stop();
  }
});

test('PODIPAM_SHIM_TRACE=1 and PODIPAM_TRACE=1: one line each per call, CLOCK_MONOTONIC across the processes, in call order', async () => {
  requireShim();
  const agent = await startAgent(join(dir.path, 'trace', 'agent.sock'), [], { PODIPAM_TRACE: '1' });
  try {
    const env = {
      PATH: process.env.PATH,
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 't1',
      CNI_IFNAME: 'eth0',
      CNI_NETNS: '/var/run/netns/x',
      CNI_PATH: '/usr/lib/cni',
      PODIPAM_AGENT_SOCKET: agent.socket,
      PODIPAM_PLUGIN: '',
      PODIPAM_SHIM_TRACE: '1',
    };
    const r = spawnSync(SHIM_BIN, [], { env, input: config('tracenet'), encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const lines = [...r.stderr.matchAll(/^podipam-shim-trace ([\d. ]+)$/gm)];
    assert.equal(lines.length, 1, r.stderr);
    const [main, connected, sent, answered, exit] = lines[0]![1]!.trim().split(' ').map(Number) as [number, number, number, number, number];
    for (let i = 0; i < 100 && !/^podipam-trace .*"ADD"/m.test(agent.log()); i++) await new Promise((w) => setTimeout(w, 20));
    const m = /^podipam-trace (\{.*"ADD".*\})$/m.exec(agent.log());
    assert.ok(m, agent.log());
    const t = JSON.parse(m[1]!) as { at: { accepted: number; parsed: number; handled: number; replied: number }; locked: number; write: number };
    const order = [main, connected, t.at.parsed, t.at.handled, t.at.replied, answered, exit];
    assert.deepEqual(
      order,
      [...order].sort((x, y) => x - y),
      `shim main ≤ connected ≤ agent parsed ≤ handled ≤ replied ≤ shim answered ≤ exit: ${order.join(' ')}`,
    );
    assert.ok(sent >= connected && sent <= answered, `sent ${sent} between connected and answered`);
    assert.ok(t.at.accepted <= t.at.parsed, JSON.stringify(t.at));
    assert.ok(t.write > 0 && t.write <= t.locked, `the durable write is timed inside the locked stretch: ${m[1]}`);
  } finally {
    await agent.stop();
  }
});

/** The answer read on `conn` (rejected on a bad frame, an error, or a close before it). */
function answerOn(conn: Socket): Promise<{ status: number; body: string }> {
  const reader = answerReader();
  return new Promise((resolve, reject) => {
    conn.on('error', reject);
    conn.on('close', () => reject(new Error('closed without an answer')));
    conn.on('data', (chunk: Buffer) => {
      try {
        const a = reader.push(chunk);
        if (a) resolve({ status: a.status, body: a.body.toString('utf8') });
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** Sends `pieces` on a new connection (each after `gapMs`, the client's side left open) and reads the answer. */
async function callInPieces(socket: string, pieces: readonly Buffer[], gapMs: number): Promise<{ status: number; body: string }> {
  const conn = connect({ path: socket, allowHalfOpen: true });
  conn.on('error', () => {}); // an error shows as no answer below
  const got = answerOn(conn);
  await new Promise<void>((resolve) => conn.once('connect', () => resolve()));
  for (const p of pieces) {
    conn.write(p);
    await new Promise((w) => setTimeout(w, gapMs));
  }
  try {
    return await got;
  } finally {
    conn.destroy();
  }
}

test('a request in pieces, one longer than the first read, and a bad frame while the client still sends: each answered', async () => {
  const agent = await startAgent(join(dir.path, 'pieces', 'agent.sock'));
  try {
    const env = (id: string) => ({ CNI_COMMAND: 'ADD', CNI_CONTAINERID: id, CNI_IFNAME: 'eth0', CNI_NETNS: '/var/run/netns/x', CNI_PATH: '/usr/lib/cni' });
    // In three pieces: the header alone, then the body in two, 30 ms apart.
    const frame = encodeRequest({ kind: 'cni', call: { env: env('p1'), stdin: Buffer.from(config('piecenet')) } });
    const a = await callInPieces(agent.socket, [frame.subarray(0, 16), frame.subarray(16, 40), frame.subarray(40)], 30);
    assert.equal(a.status, 0, a.body);
    assert.match(a.body, /10\.77\.0\.\d+\/24/);
    // 200 KiB of config (a long "args" member): more than one read of the socket.
    const long = JSON.stringify({ ...JSON.parse(config('piecenet')), args: { filler: 'x'.repeat(200 << 10) } });
    const big = encodeRequest({ kind: 'cni', call: { env: env('p2'), stdin: Buffer.from(long) } });
    const b = await callInPieces(agent.socket, [big], 0);
    assert.equal(b.status, 0, b.body);
    assert.match(b.body, /10\.77\.0\.\d+\/24/);
    // A bad magic, then more bytes after the agent answered: the error answer arrives whole.
    const bad = await callInPieces(agent.socket, [Buffer.from('GARBAGE!garbage!'), Buffer.alloc(4096, 1)], 30);
    assert.equal(bad.status, 1);
    assert.match(bad.body, /bad request/);
    const st = await agent.status();
    assert.equal(st.requests.ADD?.ok, 2, JSON.stringify(st.requests));
  } finally {
    await agent.stop();
  }
});

/**
 * V8's "weak objects" deoptimisations in plain Node, without podipam's code (bench/results/
 * idle-deopt.md): a Unix-socket server and client exchange small requests in one process for
 * 3 s (as the agent's warm-up does), that server closes, a second one with a handler from the
 * same factory serves a client process every 250 ms for 10 s, with a full collection every 2 s.
 * Optimised code that embedded the first phase's per-connection objects is thrown away at the
 * first collection that finds them dead.
 *
 *   node --log-deopt --logfile=/tmp/weak.log --no-logfile-per-isolate --expose-gc \
 *     dist/bench/tools/weak-deopt.js [freeze] [keep-sockets]
 *   grep '^code-deopt' /tmp/weak.log | grep -c 'weak objects'
 *
 * `freeze`: stop V8 optimising after the first phase (as `podipam agent --optimize warm-up`);
 * `keep-sockets`: keep every socket object of the first phase referenced.
 */
import { fork } from 'node:child_process';
import { rmSync, mkdtempSync } from 'node:fs';
import { type Socket, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';

const kept: Socket[] = [];
const keep = process.argv.includes('keep-sockets');

function handler(): (b: Buffer) => Buffer {
  const state = { n: 0 };
  return (b) => Buffer.from(JSON.stringify({ ok: true, n: ++state.n, len: b.length }));
}

function serve(sock: Socket, h: (b: Buffer) => Buffer): void {
  if (keep) kept.push(sock);
  const chunks: Buffer[] = [];
  sock.on('data', (c: Buffer) => {
    chunks.push(c);
    const b = Buffer.concat(chunks);
    if (b.includes(10)) sock.end(h(b));
  });
  sock.on('error', () => sock.destroy());
}

function call(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = connect(path);
    if (keep) kept.push(c);
    c.on('connect', () => c.write('{"a":1}\n'));
    c.on('data', () => undefined);
    c.on('end', () => resolve());
    c.on('error', reject);
  });
}

async function main(): Promise<void> {
  if (process.argv[2] === 'client') {
    for (let i = 0; i < 40; i++) {
      await call(process.argv[3]!);
      await sleep(250);
    }
    return;
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc (and --log-deopt to see the deoptimisations)');
  const dir = mkdtempSync(join(tmpdir(), 'podipam-weak-deopt-'));
  try {
    const warm = join(dir, 'warm.sock');
    const h1 = handler();
    const first = createServer((s) => serve(s, h1));
    await new Promise<void>((r) => first.listen(warm, r));
    let n = 0;
    for (const t0 = Date.now(); Date.now() - t0 < 3000; n++) await call(warm);
    await new Promise<void>((r) => first.close(() => r()));
    if (process.argv.includes('freeze')) {
      setFlagsFromString('--no-turbofan');
      setFlagsFromString('--no-maglev');
    }
    console.log(`first phase: ${n} calls; second phase from ${(performance.now() / 1000).toFixed(2)} s`);
    const real = join(dir, 'real.sock');
    const h2 = handler();
    const second = createServer((s) => serve(s, h2));
    await new Promise<void>((r) => second.listen(real, r));
    const timer = setInterval(gc, 2000);
    const client = fork(fileURLToPath(import.meta.url), ['client', real], { execArgv: [] });
    await new Promise<void>((resolve, reject) => {
      client.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`client exited ${String(code)}`))));
    });
    clearInterval(timer);
    await new Promise<void>((r) => second.close(() => r()));
    console.log(`second phase done at ${(performance.now() / 1000).toFixed(2)} s; sockets kept: ${kept.length}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

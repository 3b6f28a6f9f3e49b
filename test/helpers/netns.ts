/**
 * Small helpers for the tests that run real network namespaces: a command runner that never
 * throws, a ping between the test's own namespaces with a few retries, and the wait for IPv6
 * duplicate address detection to finish, and the source address a receiver sees (is it NATted?).
 * Traffic only ever goes between namespaces the test made.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** Runs a command (10 s at most); its status and its stdout + stderr. */
export function sh(cmd: string, args: readonly string[]): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** Pings `peer` from namespace `ns` (IPv4 or IPv6), up to 4 tries of 1 s each. */
export function ping(ns: string, peer: string): { ok: boolean; out: string } {
  const args = ['netns', 'exec', ns, 'ping', peer.includes(':') ? '-6' : '-4', '-c1', '-W1', peer];
  let r = sh('ip', args);
  for (let attempt = 0; !r.ok && attempt < 3; attempt++) r = sh('ip', args);
  return r;
}

/**
 * Waits until eth0 in `ns` has no tentative IPv6 address (duplicate address detection done,
 * ~1 s by default), polling every 100 ms for at most 10 s; fails if DAD found a duplicate.
 */
export async function waitDadDone(ns: string): Promise<void> {
  let shown = sh('ip', ['-n', ns, '-6', 'addr', 'show', 'dev', 'eth0']);
  for (let i = 0; i < 100 && shown.ok && shown.out.includes('tentative'); i++) {
    await sleep(100);
    shown = sh('ip', ['-n', ns, '-6', 'addr', 'show', 'dev', 'eth0']);
  }
  assert.ok(shown.ok, shown.out);
  assert.ok(!shown.out.includes('dadfailed'), `duplicate address detection failed in ${ns}:\n${shown.out}`);
  assert.ok(!shown.out.includes('tentative'), `eth0 in ${ns} still has tentative IPv6 addresses after 10 s:\n${shown.out}`);
}

/** A TCP listener: prints "listening", then the remote address of the one connection it takes, and exits. */
const LISTENER = `const s = require('node:net').createServer((c) => { process.stdout.write('from ' + c.remoteAddress + '\\n'); c.end(); s.close(); });
s.listen(Number(process.argv[2]), process.argv[1], () => process.stdout.write('listening\\n'));
setTimeout(() => process.exit(3), 15000).unref();`;
const CONNECT = `const c = require('node:net').connect({ host: process.argv[1], port: Number(process.argv[2]), timeout: 5000 });
c.on('connect', () => c.end()); c.on('timeout', () => { console.error('connect timed out'); process.exit(1); }); c.on('error', (e) => { console.error(e.message); process.exit(1); });`;

/**
 * Connects over TCP from namespace `fromNs` to `addr`:`port`, where a listener runs in `toNs`,
 * and returns the source address the listener saw (after any NAT on the way). Fails with the
 * listener's and the client's output when no connection arrives.
 */
export async function sourceSeenBy(toNs: string, addr: string, port: number, fromNs: string): Promise<string> {
  const listener = spawn('ip', ['netns', 'exec', toNs, process.execPath, '-e', LISTENER, addr, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  listener.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  listener.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const ended = new Promise<void>((resolve) => listener.once('close', () => resolve()));
  try {
    for (let i = 0; i < 100 && !out.includes('listening') && listener.exitCode === null; i++) await sleep(50);
    assert.ok(out.includes('listening'), `listener on ${addr}:${port} in ${toNs} did not start: ${out}`);
    const client = sh('ip', ['netns', 'exec', fromNs, process.execPath, '-e', CONNECT, addr, String(port)]);
    assert.ok(client.ok, `${fromNs} → ${addr}:${port}: ${client.out}`);
    for (let i = 0; i < 100 && !out.includes('from ') && listener.exitCode === null; i++) await sleep(50);
    const seen = /^from (\S+)$/m.exec(out)?.[1];
    assert.ok(seen !== undefined, `the listener on ${addr}:${port} in ${toNs} saw no connection from ${fromNs}: ${out}`);
    return seen.replace(/^::ffff:/, '');
  } finally {
    listener.kill('SIGKILL');
    await ended;
  }
}

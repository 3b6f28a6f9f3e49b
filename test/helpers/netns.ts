/**
 * Small helpers for the tests that run real network namespaces: a command runner that never
 * throws, a ping between the test's own namespaces with a few retries, and the wait for IPv6
 * duplicate address detection to finish. Traffic only ever goes between namespaces the test made.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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

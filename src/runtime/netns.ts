/** Named network namespaces (`ip netns`, bind mounts under /var/run/netns) for tests and demos. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const NETNS_DIR = '/var/run/netns';

/** The path of named netns `name`. */
export function netnsPath(name: string): string {
  return `${NETNS_DIR}/${name}`;
}

function ip(args: readonly string[]): { ok: boolean; out: string } {
  const r = spawnSync('ip', args, { encoding: 'utf8', timeout: 10_000 });
  if (r.error) return { ok: false, out: r.error.message };
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

/** Creates netns `name` with its loopback up; returns its path. Throws naming the netns. */
export function createNetns(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$/.test(name)) throw new TypeError(`netns name ${JSON.stringify(name)}: invalid`);
  const r = ip(['netns', 'add', name]);
  if (!r.ok) throw new Error(`cannot create network namespace ${JSON.stringify(name)}: ${r.out} (root and iproute2 needed)`);
  ip(['-n', name, 'link', 'set', 'lo', 'up']);
  return netnsPath(name);
}

/** Removes netns `name`; nothing when it does not exist. Throws if it exists and cannot go. */
export function deleteNetns(name: string): void {
  if (!existsSync(netnsPath(name))) return;
  const r = ip(['netns', 'del', name]);
  if (!r.ok && existsSync(netnsPath(name))) throw new Error(`cannot delete network namespace ${JSON.stringify(name)}: ${r.out}`);
}

/** Runs `cmd` inside netns `name` (ip netns exec); bounded by `timeoutMs`. */
export function execInNetns(name: string, cmd: readonly string[], timeoutMs = 10_000): { ok: boolean; out: string } {
  const r = spawnSync('ip', ['netns', 'exec', name, ...cmd], { encoding: 'utf8', timeout: timeoutMs });
  if (r.error) return { ok: false, out: r.error.message };
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

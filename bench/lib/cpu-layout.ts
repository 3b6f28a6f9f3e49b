/**
 * Where a benchmark's processes may run. `together`: every process on every CPU (a node that
 * runs its own etcd). `apart`: the node's processes (the driver, the plugins, the agents) on
 * every CPU but the last, the datastore's on the last — as in a cluster, whose etcd runs on
 * machines of its own and spends none of a node's CPU. On this 2-CPU machine: the node gets CPU
 * 0, etcd CPU 1. Affinity is set with util-linux's `taskset` and read back from /proc, so a
 * layout that did not take fails the run instead of measuring something else.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export type CpuLayoutName = 'together' | 'apart';

export interface CpuLayout {
  readonly name: CpuLayoutName;
  /** CPUs of the node's processes (a `taskset -c` list). */
  readonly node: string;
  /** CPUs of the datastore's processes; undefined: any (the same as the node's). */
  readonly datastore: string | undefined;
}

/**
 * The CPUs this process was given, read once when the module loads: availableParallelism()
 * follows the process's own affinity, so read after a pinning it would count the pinned CPUs.
 */
const CPUS = availableParallelism();

/** Every CPU this process was given, as a `taskset -c` list. */
export const allCpus = (): string => `0-${CPUS - 1}`;

/** The layouts named in `list` (comma-separated), in order. */
export function cpuLayouts(list: string): CpuLayout[] {
  const n = CPUS;
  const all = allCpus();
  return list.split(',').map((name): CpuLayout => {
    if (name === 'together') return { name, node: all, datastore: undefined };
    if (name === 'apart') {
      if (n < 2) throw new Error(`CPU layout apart needs 2 CPUs or more, this machine has ${n}`);
      return { name, node: n === 2 ? '0' : `0-${n - 2}`, datastore: String(n - 1) };
    }
    throw new Error(`CPU layout ${JSON.stringify(name)}: expected together or apart`);
  });
}

/** Every thread of process `pid` (and so what it starts from now on) onto `cpus`. */
export function pinProcess(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** The CPUs process `pid` may run on, as the kernel lists them (e.g. `0`, `0-1`). */
export function allowedCpus(pid: number): string {
  const m = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no Cpus_allowed_list in /proc/${pid}/status`);
  return m[1]!;
}

/** Throws unless every process of `pids` may run exactly on `cpus` (as the kernel writes the list). */
export function checkAffinity(what: string, pids: readonly number[], cpus: string): void {
  const want = normalise(cpus);
  for (const pid of pids) {
    const got = allowedCpus(pid);
    if (normalise(got) !== want) throw new Error(`${what} (pid ${pid}) may run on CPUs ${got}, the layout wants ${cpus}`);
  }
}

/** `0-0` and `0` are the same list: the kernel writes a single CPU without a range. */
function normalise(list: string): string {
  return list.replace(/\b(\d+)-\1\b/g, '$1');
}

/** One line saying where the layout puts what. */
export function describeLayout(l: CpuLayout): string {
  return l.datastore === undefined
    ? `${l.name}: every process on CPUs ${l.node}`
    : `${l.name}: the node's processes on CPU ${l.node}, the etcd members on CPU ${l.datastore}`;
}

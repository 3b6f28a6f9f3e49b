/**
 * CPU time of processes from /proc (Linux; clock ticks of 10 ms, USER_HZ 100): a process's own
 * user + system time, or what this process's waited-for children used (cutime + cstime), and
 * the pids of this process's children with a given command name (e.g. the etcd members a bench
 * started). Coarse per call; meant for differences over a phase of thousands of calls.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** The fields of /proc/<pid>/stat after the command name (field 3 of stat(5) is index 0). */
function statFields(pid: number | 'self'): string[] {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return s.slice(s.lastIndexOf(') ') + 2).split(' ');
}

/** User + system CPU ms of `pid`; 'children': of this process's waited-for children. */
export function cpuMs(pid: number | 'children'): number {
  const f = statFields(pid === 'children' ? 'self' : pid);
  return pid === 'children' ? (Number(f[13]) + Number(f[14])) * 10 : (Number(f[11]) + Number(f[12])) * 10;
}

/**
 * CPU ms of `pid` to the nanosecond: the sum over its live threads of their time on a CPU
 * (/proc/<pid>/task/<tid>/schedstat, first field). For short phases where 10 ms ticks read 0;
 * a thread that exited meanwhile is no longer counted (the long-lived processes measured keep
 * theirs: Node's and Go's worker threads live as long as the process).
 */
export function threadCpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* exited meanwhile */
    }
  }
  return ns / 1e6;
}

/** Pids of this process's direct children whose command name (/proc/<pid>/comm) is `comm`. */
export function childPids(comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (Number(statFields(Number(d))[1]) !== process.pid) continue;
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm) out.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

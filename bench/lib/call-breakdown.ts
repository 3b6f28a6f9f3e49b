/**
 * Where one ADD's time goes, from three sets of CLOCK_MONOTONIC timestamps of the same
 * sequential calls (pure: text in, table rows out):
 *
 *   driver  bench/native/cni-driver.c `seq` lines "add_us del_us add_start add_end" (before
 *           posix_spawn, after waitpid)
 *   shim    the shim's `podipam-shim-trace MAIN CONNECTED SENT ANSWERED EXIT` lines
 *           (PODIPAM_SHIM_TRACE=1; one per call, ADD then DEL)
 *   agent   the agent's `podipam-trace {…}` lines (PODIPAM_TRACE=1): `at` (accepted, parsed,
 *           handled, replied: the answer's write began), the local back end's phases (batchWait, locked,
 *           write; a back end without them — the warm pool, cluster mode — gets one handler row), `runqMs` (the agent's wait for a CPU during the call), and its
 *           `podipam-trace-gc START_US DURATION_US` lines (GC pauses)
 *
 * Each segment is the median (and p90, p99) over the calls of its own difference (so the
 * segments' medians need not add up to the median total exactly; the table prints both), and,
 * for the tail, the segment's mean over the slowest 5 % of calls (by total) minus its median:
 * where a slow call's extra time sits.
 */

export interface BreakdownRow {
  readonly label: string;
  /** Median milliseconds. */
  readonly ms: number;
  readonly p90: number;
  readonly p99: number;
  /** Mean over the slowest 5 % of calls (by the driver's total) minus the median, ms. */
  readonly tailExtra: number;
}

interface AgentTrace {
  readonly verb: string;
  readonly batchWait?: number;
  readonly locked?: number;
  readonly write?: number;
  readonly runqMs?: number;
  readonly at?: { accepted: number; parsed: number; handled: number; replied: number };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The nearest-rank quantile `q` (0..1) of `xs`. */
const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
};

/** The ADDs' breakdown; throws naming what does not line up (counts, a missing field). */
export function callBreakdown(driverOut: string, shimErr: string, agentErr: string): BreakdownRow[] {
  const driver = driverOut
    .trim()
    .split('\n')
    .map((l) => l.split(' ').map(Number));
  const shim = [...shimErr.matchAll(/^podipam-shim-trace ([\d. ]+)$/gm)].map((m) => m[1]!.trim().split(' ').map(Number));
  const agent = [...agentErr.matchAll(/^podipam-trace (\{.*\})$/gm)].map((m) => JSON.parse(m[1]!) as AgentTrace).filter((t) => t.verb === 'ADD');
  if (shim.length !== 2 * driver.length) throw new Error(`breakdown: ${driver.length} pairs but ${shim.length} shim trace lines (want 2 per pair)`);
  if (agent.length < driver.length) throw new Error(`breakdown: ${driver.length} ADDs but ${agent.length} agent trace lines`);
  const adds = agent.slice(agent.length - driver.length); // the last ones: the agent may have served others before
  const gcs = [...agentErr.matchAll(/^podipam-trace-gc (\d+) (\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])] as const);
  /** µs of GC pause inside [from, to] (µs). */
  const gcWithin = (from: number, to: number): number => gcs.reduce((sum, [s, d]) => sum + Math.max(0, Math.min(to, s + d) - Math.max(from, s)), 0);
  const seg = new Map<string, number[]>();
  const put = (label: string, us: number): void => {
    const xs = seg.get(label) ?? [];
    xs.push(us / 1000);
    seg.set(label, xs);
  };
  // The local back end traces its lock and its write; the warm pool and cluster mode do their
  // allocation and their durable write inside the handler (no such rows for them).
  const locking = adds.some((a) => a.locked !== undefined);
  driver.forEach((d, i) => {
    const [t0, t1] = [d[2]!, d[3]!];
    const [main, connected, sent, answered, exit] = shim[2 * i]!;
    const a = adds[i]!;
    if (!a.at || t0 === undefined || t1 === undefined) throw new Error(`breakdown: call ${i} lacks timestamps (an agent or driver without tracing?)`);
    const handler = (a.at.handled - a.at.parsed) / 1000;
    const locked = a.locked ?? 0;
    const write = a.write ?? 0;
    put('exec + loading of the shim', main! - t0);
    put('shim: stdin, config, connect', connected! - main!);
    put('shim: framing, write', sent! - connected!);
    put('agent: event loop until parsed', a.at.parsed - sent!);
    put('  of which from the accept', a.at.parsed - a.at.accepted);
    if (locking) {
      put('agent: handler outside the lock', (handler - locked) * 1000);
      put('  of which waiting for the batch', (a.batchWait ?? 0) * 1000);
      put('agent: allocation under the lock', (locked - write) * 1000);
      put('agent: durable write', write * 1000);
    } else put('agent: handler (allocation, durable write)', handler * 1000);
    put('agent: encode the answer', a.at.replied - a.at.handled);
    put('write of the answer until the shim has it', answered! - a.at.replied);
    put('shim: check, print', exit! - answered!);
    put('shim exit until reaped', t1 - exit!);
    put('agent: in GC pauses during the call', gcWithin(t0, t1));
    put('agent: waiting for a CPU (accept to answer)', (a.runqMs ?? 0) * 1000);
    put('total (driver)', t1 - t0);
  });
  const totals = seg.get('total (driver)') ?? [];
  const tailCount = Math.max(1, Math.round(totals.length * 0.05));
  const slowest = totals
    .map((t, i) => [t, i] as const)
    .sort((a, b) => b[0] - a[0])
    .slice(0, tailCount)
    .map(([, i]) => i);
  return [...seg].map(([label, xs]) => {
    const m = median(xs);
    const tailMean = slowest.reduce((sum, i) => sum + xs[i]!, 0) / slowest.length;
    return { label, ms: m, p90: quantile(xs, 0.9), p99: quantile(xs, 0.99), tailExtra: tailMean - m };
  });
}

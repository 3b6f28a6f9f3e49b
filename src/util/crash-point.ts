/**
 * Crash points: a test-only hook that SIGKILLs the process at a named step, so a test can prove
 * that a crash exactly there leaves the store consistent (test/e2e/crash-points.test.ts runs
 * every point below on every back end).
 *
 * Armed by the environment, read once per process: `PODIPAM_CRASH_AT=<name>[@<n>][,…]` (die at
 * the n-th time the step is reached, default the first) AND `PODIPAM_TEST_HOOKS=1`. Without the
 * flag a set PODIPAM_CRASH_AT is never honoured: bin/podipam refuses to start at all (CNI code 4,
 * main.ts), so a stray variable on a node is loud, not a silent landmine. An unknown name is
 * refused the same way (a typo must not make a test pass vacuously). Unset, a crash point costs
 * one comparison.
 *
 * Only the process's own environment counts: the agent never takes these variables from a
 * forwarded call.
 */
import { fs } from '../util/builtins.js';

/** Every crash point, with the state a crash there leaves behind. */
export const CRASH_POINTS = {
  // local back end (host-local compatible files, src/local)
  'local.lock.held': 'local: the network directory lock is held, nothing read yet (ADD, DEL, CHECK, GC)',
  'local.add.tmp-written': 'local ADD: the reservation written to the temporary file, not yet linked to the address name',
  'local.add.reserved': 'local ADD: an address file linked, last_reserved_ip not yet written',
  'local.add.recorded': 'local ADD: last_reserved_ip written for a range set; further sets and the answer not yet',
  'local.add.before-answer': 'local ADD: every range set reserved and the lock dropped; the result not printed',
  'local.del.removed': "local DEL: one address file removed, the attachment's others not yet",
  'local.gc.removed': 'local GC: one stale address file removed, the others not yet',
  // cluster back end (blocks, handles; src/cluster), per store round trip
  'cluster.snapshot.loaded': 'cluster: pools and settings read (first round trip), nothing written',
  'cluster.assign.blocks-loaded': "cluster ADD: the node's blocks read, nothing written",
  'cluster.assign.planned':
    'cluster ADD: the transaction planned, not sent (block, affinity and handle go in one txn: there is no step between block and handle)',
  'cluster.block.claimed': 'cluster ADD: the txn that claimed a new block (block + affinity + handle) committed; hints not noted, no answer',
  'cluster.assign.committed': 'cluster ADD: the assignment txn committed; hints not noted, no answer',
  'cluster.release.committed': 'cluster DEL: the release txn committed (addresses freed, handle deleted); no answer',
  'cluster.sticky.held': "cluster DEL of a sticky pod: the txn moving its addresses to the pod's hold committed; no answer",
  'cluster.block.released': 'cluster DEL: a release txn that also deleted an empty block and its affinity committed',
  'cluster.release-addrs.committed': 'cluster: a release-by-address txn committed (agent returns, ipam release); no answer',
  'cluster.gc.listed': "cluster GC: the node's blocks re-read, candidate handles not yet read",
  'cluster.gc.released': 'cluster GC: one stale handle released, the others not yet',
  'cluster.plugin.before-save': 'cluster plugin: the datastore work done, the node hint file not yet saved (the node lock held)',
  'cluster.plugin.saved': 'cluster plugin: the hint file saved, the node lock still held, no answer',
  'cluster.pool.shrink-marked':
    'pool resize (shrink): the narrowed CIDR written with shrinkingFrom set, no block outside it deleted yet (the pool serves only the new CIDR; its old space still counts as its own)',
  'cluster.group.committed': 'agent cluster mode: a group-commit txn (several pods of one node) committed; no answer',
  'cluster.release-group.committed': 'agent cluster mode: a group-release txn (several DELs of one node) committed; hints not noted, no answer',
  // node CIDR controller (src/controller)
  'controller.cidr.committed': 'controller: node records with their CIDR claims committed (a batch, or one node after a conflict); not yet noted in memory',
  // agent warm pool (src/warm/warm-service.ts)
  'agent.refill.committed': 'agent: a refill assigned addresses to a warm handle in the datastore; the resource DB does not know them yet',
  'agent.refill.recorded': 'agent: a refill recorded in the resource DB; the pool not yet told',
  'agent.return.committed': 'agent: surplus addresses released in the datastore; still held in the resource DB',
  'agent.writebehind.committed': 'agent: a batch of pod records written to the datastore; the queue not yet advanced',
  'agent.add.recorded': 'agent ADD: the pod committed to the resource DB; no answer sent',
  'agent.del.recorded': 'agent DEL: the pod removed from the resource DB (records queued); no answer sent',
} as const;

export type CrashPointName = keyof typeof CRASH_POINTS;

/** The names, in the order above. */
export const CRASH_POINT_NAMES = Object.keys(CRASH_POINTS) as CrashPointName[];

export const CRASH_AT_ENV = 'PODIPAM_CRASH_AT';
export const TEST_HOOKS_ENV = 'PODIPAM_TEST_HOOKS';

/**
 * PODIPAM_CRASH_AT's value → point → the hit that kills (1 = the first). Throws an Error naming
 * the variable and the offending entry.
 */
export function parseCrashAt(text: string): Map<CrashPointName, number> {
  const out = new Map<CrashPointName, number>();
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const m = /^([a-z0-9.-]+)(?:@([1-9][0-9]{0,8}))?$/.exec(entry);
    if (!m || !(m[1]! in CRASH_POINTS)) {
      throw new Error(`${CRASH_AT_ENV} ${JSON.stringify(entry)}: not <name>[@<n>] with a known crash point (src/util/crash-point.ts lists them)`);
    }
    out.set(m[1] as CrashPointName, m[2] === undefined ? 1 : Number(m[2]));
  }
  return out;
}

/**
 * Why this environment must not run (a message naming the variable), or undefined. bin/podipam
 * calls it first thing.
 */
export function crashPointRefusal(env: NodeJS.ProcessEnv): string | undefined {
  const text = env[CRASH_AT_ENV];
  if (text === undefined || text === '') return undefined;
  if (env[TEST_HOOKS_ENV] !== '1') {
    return `${CRASH_AT_ENV}=${JSON.stringify(text)} is set but ${TEST_HOOKS_ENV}=1 is not: crash points are a test-only hook; refusing to run`;
  }
  try {
    parseCrashAt(text);
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}

/** null: disarmed (the common case); undefined: not read yet. */
let armed: Map<CrashPointName, number> | null | undefined;

/** The armed points as this process's environment sets them (read once), or null. */
function armedPoints(): Map<CrashPointName, number> | null {
  if (armed === undefined) armed = crashPointRefusal(process.env) === undefined && process.env[CRASH_AT_ENV] ? parseCrashAt(process.env[CRASH_AT_ENV]) : null;
  return armed;
}

/** Whether any crash point is armed in this process (a writer that skips the points between its steps must not run then). */
export function crashPointsArmed(): boolean {
  return armedPoints() !== null;
}

/** SIGKILLs this process when `name` is armed and this is its n-th hit; otherwise nothing. */
export function crashPoint(name: CrashPointName): void {
  if (armed === null) return;
  const points = armedPoints();
  if (points === null) return;
  const left = points.get(name);
  if (left === undefined) return;
  if (left > 1) {
    points.set(name, left - 1);
    return;
  }
  try {
    fs.writeSync(2, `podipam: crash point ${name} reached (${CRASH_AT_ENV}): SIGKILL\n`);
  } catch {
    // stderr closed: die all the same
  }
  process.kill(process.pid, 'SIGKILL');
}

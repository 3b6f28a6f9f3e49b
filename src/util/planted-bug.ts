/**
 * Planted bugs: a test-only hook that switches off one safety condition, so a test can prove
 * that the checker meant to catch its absence does catch it (the partition rig's history checker,
 * test/chaos/). Without such a test a checker that never fails would look exactly like a system
 * that never breaks.
 *
 * Armed by the environment, read once per process: `PODIPAM_PLANT_BUG=<name>` AND
 * `PODIPAM_TEST_HOOKS=1`. As with crash points (crash-point.ts), a set PODIPAM_PLANT_BUG without
 * the flag, or naming no known bug, makes bin/podipam refuse to start (CNI code 4). Unset, a
 * planted bug costs one comparison.
 */
import { TEST_HOOKS_ENV } from './crash-point.js';

export const PLANTED_BUGS = {
  'assign-skips-block-cas':
    "cluster assignment (one pod's txn, a node's group commit, a warm refill) sends its txn without the compare on the blocks it writes: a writer whose view of a block is stale overwrites it",
  'gate-skips-space-checks':
    "the write gate sends every write as planned: no overlap guards on new blocks, no pool write checked against the other pools' spaces and the blocks (what one module guarding every write path protects against)",
  'warm-trust-blind':
    "the warm pool's watch of its own handles sees nothing: an idle address released or given to another holder behind the agent stays idle, and is handed out",
} as const;

export type PlantedBugName = keyof typeof PLANTED_BUGS;

export const PLANT_BUG_ENV = 'PODIPAM_PLANT_BUG';

/** Why this environment must not run (a message naming the variable), or undefined. */
export function plantedBugRefusal(env: NodeJS.ProcessEnv): string | undefined {
  const name = env[PLANT_BUG_ENV];
  if (name === undefined || name === '') return undefined;
  if (env[TEST_HOOKS_ENV] !== '1')
    return `${PLANT_BUG_ENV}=${JSON.stringify(name)} is set but ${TEST_HOOKS_ENV}=1 is not: planted bugs are a test-only hook; refusing to run`;
  if (!(name in PLANTED_BUGS)) return `${PLANT_BUG_ENV} ${JSON.stringify(name)}: not a known planted bug (${Object.keys(PLANTED_BUGS).join(', ')})`;
  return undefined;
}

/** null: none (the common case); undefined: not read yet. */
let planted: PlantedBugName | null | undefined;

/** Whether `name` is the bug planted in this process. */
export function plantedBug(name: PlantedBugName): boolean {
  if (planted === undefined)
    planted = plantedBugRefusal(process.env) === undefined && process.env[PLANT_BUG_ENV] ? (process.env[PLANT_BUG_ENV] as PlantedBugName) : null;
  return planted === name;
}

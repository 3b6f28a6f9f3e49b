/**
 * The warm-up's arithmetic (warm-up.ts runs it): how many rounds it runs, when it goes on past
 * its time, which rounds are followed by a burst of concurrent calls, how many calls its rounds
 * make, and which warm-up counts as completed (then the agent stops V8 optimising).
 */

/**
 * Rounds (an ADD and a DEL on each of the two local networks and on the cluster's, and the
 * bursts): at least MIN_ROUNDS, then more up to MAX_ROUNDS while the warm-up has taken less than
 * its budget (or, on a busy node, until `targetRounds`: see there). V8 optimises a function
 * after it has run a number of times that grows with its size; measured (V8's --trace-opt, the
 * bench's driver, before the bursts): with 400 rounds the first 1,000 pods' calls still saw ~55
 * functions optimised and the tail above; with 1,000 rounds ~30, and a tail a third as long.
 */
export const MIN_ROUNDS = 8;
export const MAX_ROUNDS = 1000;
/** The default budget: what an agent's start may spend on its warm-up (~340-480 rounds in it on an idle 2-vCPU node). */
export const WARM_UP_BUDGET_MS = 3000;

/**
 * The rounds a warm-up aims at per ms of its budget: 200 in 3 s (an idle 2-vCPU node does
 * ~340-480 there). On a node too busy for that — its start among other processes' starts — the
 * warm-up goes on past its budget until it has done that many, for at most STRETCH times its
 * budget and STRETCH_MAX_MS more than it (an agent does not listen meanwhile: the DaemonSet's
 * liveness probe allows ~150 s). Measured (`bench/tools/agent-ab.ts`, a cluster-mode agent on
 * etcd, 6 busy loops while it started): a warm-up of 37-54 rounds left the agent's calls 13-16 %
 * dearer for its life than with V8 optimising throughout (stretched to its 200: 7-10 %), and
 * three agents started at once on one CPU did 10 rounds each (their first, cold rounds and V8's
 * compiler took the 3 s). One that still falls short is reported (`target` above `rounds`): the
 * agent then leaves V8 optimising (agent-server.ts).
 */
const TARGET_ROUNDS_PER_S = 200 / 3;
const STRETCH = 4;
const STRETCH_MAX_MS = 30_000;

/** The rounds a warm-up of `budgetMs` aims at (at least MIN_ROUNDS, at most MAX_ROUNDS). */
export function targetRounds(budgetMs: number): number {
  return Math.min(MAX_ROUNDS, Math.max(MIN_ROUNDS, Math.ceil((budgetMs / 1000) * TARGET_ROUNDS_PER_S)));
}

/** Whether a warm-up of `budgetMs` that has done `rounds` rounds in `ms` runs another. */
export function wantsAnotherRound(rounds: number, ms: number, budgetMs: number): boolean {
  if (rounds >= MAX_ROUNDS) return false;
  const stretched = Math.min(STRETCH * budgetMs, budgetMs + STRETCH_MAX_MS);
  return rounds < MIN_ROUNDS || ms < budgetMs || (rounds < targetRounds(budgetMs) && ms < stretched);
}

/** Whether a warm-up ran as meant: without error and at least its target rounds (else the agent leaves V8 optimising). */
export function warmUpCompleted(w: { readonly rounds: number; readonly target: number; readonly error?: string } | undefined): boolean {
  return w !== undefined && w.error === undefined && w.rounds >= w.target;
}

/**
 * Bursts: after a round's calls, BURST_CALLS ADDs of one network at once, then their DELs at once
 * — the cluster network's every BURST_EVERY rounds, the others' in turn every 2 × BURST_EVERY. A
 * node's concurrent calls take paths of their own: the cluster back end's group commit and group
 * release (src/agent/cluster-services.ts), the wait of a lone call in a burst, a local
 * directory's batch of several ADDs. Measured (V8's --trace-opt, a cluster-mode agent on etcd):
 * without bursts the group commit's planning never ran in the warm-up, and in a burst of pods
 * (128 pods × 16 networks) it ran in V8's baseline tiers for the agent's life. With the bursts a
 * round costs about 1.6 times a plain one.
 */
const BURST_EVERY = 4;
export const BURST_CALLS = 4;
/**
 * The warm-up's cluster services count a node as in a burst this long after a group (the
 * agent's: BURST_WINDOW_MS, 50 ms): its next lone call waits as a pod's would, but with the
 * agent's window every cluster call of the dozen rounds after a burst would wait, and the
 * warm-up did a third of its rounds.
 */
export const WARM_UP_BURST_WINDOW_MS = 4;

/**
 * The network whose burst follows round `round` (its index in the round's `networks` networks, the
 * cluster's at `cluster`), or undefined.
 */
export function burstAfter(round: number, networks: number, cluster: number): number | undefined {
  if (round % BURST_EVERY === BURST_EVERY - 1) return cluster;
  if (round % (2 * BURST_EVERY) !== 1 || networks < 2) return undefined;
  const other = Math.floor(round / (2 * BURST_EVERY)) % (networks - 1);
  return other < cluster ? other : other + 1;
}

/**
 * Whether round `round` DELs each network's attachment twice, as containerd does (at
 * StopPodSandbox, again at RemovePodSandbox): a DEL that finds nothing left takes paths of its
 * own (in cluster mode a release by the attachment's old handle, through the node's queue as a
 * job of another kind — met first at a pod's second DEL after the warm-up, it threw the queue's
 * optimised code away for good). Every other round, from the first.
 */
export function delsTwice(round: number): boolean {
  return round % 2 === 0;
}

/** The calls `rounds` rounds make over `networks` networks (an ADD and a DEL each, a second DEL in `delsTwice` rounds, and the bursts'), status requests not counted. */
export function callsOfRounds(rounds: number, networks: number): number {
  let calls = 0;
  for (let r = 0; r < rounds; r++) {
    calls += (delsTwice(r) ? 3 : 2) * networks;
    if (burstAfter(r, networks, 0) !== undefined) calls += 2 * BURST_CALLS;
  }
  return calls;
}

/**
 * The rounds of the warm-up's rehearsal (warm-up.ts): enough for a burst of the cluster network
 * (after round 3) and of another network (after round 1), so that its teardown follows every
 * kind of call the warm-up makes.
 */
export const REHEARSAL_ROUNDS = BURST_EVERY;

/** A new epoch (data directory and datastore) every this many rounds, at most FRESH_EPOCHS times, in the first EPOCH_SHARE of the target rounds. */
export const FRESH_DATA_ROUNDS = 10;
export const FRESH_EPOCHS = 4;
export const EPOCH_SHARE = 0.2;

/**
 * The epoch of round `round` of a warm-up aiming at `target` rounds: a new local data directory
 * and cluster datastore every FRESH_DATA_ROUNDS rounds, at most FRESH_EPOCHS times and only in
 * the first EPOCH_SHARE of the target rounds (the first 40 of 3 s's 200), then the last one for
 * good. What a new one shows V8 for the first time (a network's first calls in a directory, a
 * datastore's snapshot loaded and node view made, its first blocks claimed) threw optimised code
 * away when it came late (every 50 rounds up to 60 % of the budget, before), and V8 then
 * optimised that code again only hundreds of calls later: the cluster back end's assignment
 * stayed in V8's baseline tiers for the agent's life (V8's --trace-opt and --trace-deopt, round
 * by round; bench/tools/deopt-trace.ts lists what a warm-up leaves so). Not sooner either: with a
 * new epoch every 3 rounds the datastore's first calls ran before V8 kept feedback for them, and
 * the agent's first call on its own datastore threw the assignment's optimised code away
 * (test/e2e/agent-deopt.test.ts).
 */
export function epochOf(round: number, target: number): number {
  return Math.min(Math.floor(round / FRESH_DATA_ROUNDS), FRESH_EPOCHS, Math.floor((EPOCH_SHARE * target) / FRESH_DATA_ROUNDS));
}

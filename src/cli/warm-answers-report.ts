/**
 * After a command that takes addresses out of service (`ipam reserve`, `pool drain`, `pool
 * disable`, `pool set --disabled true|--node-selector`): waits for the node agents whose warm
 * pools hold addresses it concerns to apply it (src/warm/warm-answers.ts) and says how that
 * ended. Nothing is printed when no warm pool holds any of them. Exit code 3 when an agent has
 * not applied it by the deadline: it may still hand its idle ones to pods until it does
 * (stopped agent, or one cut off from the datastore).
 */
import type { Command } from 'commander';
import type { Prefix } from '../ip/index.js';
import type { Store } from '../store/index.js';
import { parseDuration } from './parse-flag.js';

/** The exit code of a change whose idle warm addresses were not all given back in time. */
export const EXIT_WARM_NOT_APPLIED = 3;

export const WARM_TIMEOUT_FLAG = '--warm-timeout <duration>';
export const WARM_TIMEOUT_HELP =
  'wait this long for the node agents whose warm pools hold addresses the change takes out of service to apply it (exit 3 if one has not; default 10s; 0: do not wait)';

/** Adds --warm-timeout to `cmd`. */
export function withWarmTimeout(cmd: Command): Command {
  return cmd.option(WARM_TIMEOUT_FLAG, WARM_TIMEOUT_HELP);
}

/** The --warm-timeout value in ms (validated here, before any write). */
export function warmTimeoutMs(text: string | undefined): number {
  return text === undefined ? 10_000 : parseDuration('--warm-timeout', text);
}

/**
 * Waits and reports. `what` names the change ("reservation r1"); `onNode`, when given, limits
 * it to the nodes it concerns (a node selector); `toStderr`: the command's stdout is data (JSON).
 * Call it after the change committed: the generation waited for is the `config` record's now.
 */
export async function reportWarmAnswers(
  store: Store,
  what: string,
  space: readonly Prefix[],
  o: { timeoutMs: number; onNode?: (node: string) => boolean; toStderr?: boolean },
): Promise<void> {
  const { awaitWarmAnswers } = await import('../warm/warm-answers.js');
  const { CONFIG_KEY } = await import('../cluster/records/index.js');
  const configRev = (await store.get(CONFIG_KEY))?.rev ?? 0;
  const r = await awaitWarmAnswers(store, { space, ...(o.onNode ? { onNode: o.onNode } : {}) }, configRev, { timeoutMs: o.timeoutMs });
  const lines: string[] = [];
  for (const a of r.answered) {
    const parts = [`${what}: node ${a.node}'s agent applied it (${(a.ms / 1000).toFixed(2)} s): it hands out none of these addresses from now on`];
    for (const u of a.inUse)
      parts.push(`  ${u.addr} in use by ${u.pod !== undefined ? `pod ${u.pod}` : `attachment ${u.attachment}`}: it keeps it until its DEL`);
    if (a.cooling.length > 0) parts.push(`  cooling after a DEL, given back when the cooldown ends: ${a.cooling.join(', ')}`);
    if (a.sticky.length > 0) parts.push(`  kept for sticky pods, given back when their window ends: ${a.sticky.join(', ')}`);
    if (a.idle.length > 0) parts.push(`  still idle in its view (being given back): ${a.idle.join(', ')}`);
    lines.push(...parts);
  }
  for (const n of r.silent) {
    const idle = n.idle.length > 0 ? `: it may hand ${n.idle.join(', ')} to pods until it does` : '';
    lines.push(
      o.timeoutMs === 0
        ? `${what}: not waited for (--warm-timeout 0): node ${n.node}'s agent has not applied it yet${idle}`
        : `${what}: node ${n.node}'s agent has not applied it after ${(o.timeoutMs / 1000).toFixed(1)} s (stopped, or cut off from the datastore?)${idle}`,
    );
  }
  if (r.silent.length > 0 && o.timeoutMs > 0) process.exitCode = EXIT_WARM_NOT_APPLIED;
  if (lines.length > 0) (o.toStderr ? process.stderr : process.stdout).write(`${lines.join('\n')}\n`);
}

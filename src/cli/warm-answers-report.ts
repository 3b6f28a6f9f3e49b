/**
 * After a command that takes addresses out of service (`ipam reserve`, `pool drain`, `pool
 * disable`, `pool set --disabled true|--node-selector`): waits for the node agents whose warm
 * pools hold addresses it concerns to apply it (src/warm/warm-answers.ts) and says how that
 * ended. Nothing is printed when no warm pool holds any of them. Exit code 3 when an agent has
 * not applied it by the deadline: it may still hand its idle ones to pods until it does
 * (stopped agent, or one cut off from the datastore).
 */
import type { Command } from 'commander';
import type { WarmScope } from '../warm/warm-answers.js';
import type { Store } from '../store/index.js';
import { parseDuration } from './parse-flag.js';

/** The exit code of a change some node agent had not applied by the deadline (or whose blocks could not all be read). */
export const EXIT_WARM_NOT_APPLIED = 3;

const WARM_TIMEOUT_FLAG = '--warm-timeout <duration>';
const WARM_TIMEOUT_HELP =
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
 * Waits and reports. `what` names the change ("reservation r1"), `scope` what it takes out of
 * service; `toStderr`: the command's stdout is data (JSON).
 * Call it after the change committed.
 */
export async function reportWarmAnswers(store: Store, what: string, scope: WarmScope, o: { timeoutMs: number; toStderr?: boolean }): Promise<void> {
  const { awaitChangeApplied } = await import('../warm/warm-answers.js');
  const r = await awaitChangeApplied(store, scope, { timeoutMs: o.timeoutMs });
  const lines: string[] = [];
  for (const a of r.answered) {
    const parts = [`${what}: node ${a.node}'s agent applied it (${(a.ms / 1000).toFixed(2)} s): it hands none of these addresses to a new pod from now on`];
    for (const u of a.inUse)
      parts.push(`  ${u.addr} in use by ${u.pod !== undefined ? `pod ${u.pod}` : `attachment ${u.attachment}`}: it keeps it until its DEL`);
    if (a.cooling.length > 0) parts.push(`  cooling after a DEL, given back when the cooldown ends: ${a.cooling.join(', ')}`);
    if (a.sticky.length > 0)
      parts.push(`  kept for sticky pods (their next incarnation gets it back), given back when their window ends: ${a.sticky.join(', ')}`);
    if (a.idle.length > 0) parts.push(`  still idle in its view (being given back): ${a.idle.join(', ')}`);
    lines.push(...parts);
  }
  for (const n of r.silent) {
    const idle = n.idle.length > 0 ? `: it may hand ${n.idle.join(', ')} to pods until it does` : '';
    lines.push(
      o.timeoutMs === 0
        ? `${what}: not waited for (--warm-timeout 0): node ${n.node}'s agent has not applied it yet${idle}`
        : n.oldAgent
          ? `${what}: node ${n.node}'s agent runs a version that does not answer (its holder view names no config generation): it applies the change at its watch event, but this command cannot see when${idle}`
          : `${what}: node ${n.node}'s agent has not applied it after ${(o.timeoutMs / 1000).toFixed(1)} s (stopped, or cut off from the datastore?)${idle}`,
    );
  }
  if (r.unreadableBlocks.length > 0)
    lines.push(
      `${what}: ${r.unreadableBlocks.length} block record(s) could not be read (${r.unreadableBlocks.slice(0, 5).join(', ')}${r.unreadableBlocks.length > 5 ? ', …' : ''}; ipam check names the fault): the agents holding addresses in them were not waited for`,
    );
  if ((r.silent.length > 0 || r.unreadableBlocks.length > 0) && o.timeoutMs > 0) process.exitCode = EXIT_WARM_NOT_APPLIED;
  if (lines.length > 0) (o.toStderr ? process.stderr : process.stdout).write(`${lines.join('\n')}\n`);
}

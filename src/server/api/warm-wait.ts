/**
 * The node agents' answer to a change that takes addresses out of service (a pool drained,
 * disabled or selecting fewer nodes; a reservation), for the API's answer (`agents`): one home
 * for the `warmTimeoutMs` query parameter and for the shape of the answer.
 */
import type { Store } from '../../store/index.js';
import { awaitChangeApplied, type WarmScope } from '../../warm/warm-answers.js';
import type { Ctx } from '../http/http-server.js';
import { queryInt } from '../http/validate.js';

/** `warmTimeoutMs`: how long a change that takes addresses out of service waits for the node agents (default 10 s). */
export function warmTimeout(c: Ctx): number {
  return queryInt(c.query, 'warmTimeoutMs', 10_000, 0, 60_000);
}

/**
 * Waits (bounded) for the node agents whose warm pools hold addresses in `scope` to apply the
 * change just committed (src/warm/warm-answers.ts): `silent` names those that had not, with the
 * idle addresses they may still hand out. The change is made either way.
 */
export async function agentsApplied(store: Store, scope: WarmScope, timeoutMs: number): Promise<unknown> {
  const r = await awaitChangeApplied(store, scope, { timeoutMs });
  return { answered: r.answered.map((a) => ({ ...a, ms: Math.round(a.ms) })), silent: r.silent, unreadableBlocks: r.unreadableBlocks };
}

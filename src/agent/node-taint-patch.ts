/**
 * Writes the agent's Node's taints safely (the I/O of node-taint.ts): read the Node, let the
 * caller compute the taints from what was read, and write them with a JSON merge patch that
 * carries the read `metadata.resourceVersion` — the API server applies it only if the Node is
 * unchanged since, so a taint another controller added meanwhile is never lost (409 Conflict:
 * read again and recompute, at most MAX_ATTEMPTS times). Nothing is written when the taints are
 * already as wanted. Every request is bounded by `timeoutMs`.
 */
import type { CoreV1Api, V1Taint } from '@kubernetes/client-node';
import type { Taint } from './node-taint.js';

/** Read–compute–write rounds before giving up on conflicts (the next resync tries again). */
export const MAX_ATTEMPTS = 5;

export interface TaintApplyResult {
  /** The taints written, or undefined when none needed writing. */
  readonly wrote: readonly Taint[] | undefined;
  /** Reads it took (1 without a conflict). */
  readonly attempts: number;
}

/**
 * Reads Node `name`, calls `decide(taints)` and writes what it returns (undefined: nothing to
 * write). Throws naming the Node when it does not exist, on another error, or after
 * MAX_ATTEMPTS conflicts.
 */
export async function applyNodeTaints(
  api: CoreV1Api,
  name: string,
  decide: (current: readonly Taint[]) => Taint[] | undefined,
  timeoutMs = 10_000,
): Promise<TaintApplyResult> {
  const k8s = await import('@kubernetes/client-node');
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch) as Parameters<CoreV1Api['patchNode']>[1];
  for (let attempt = 1; ; attempt++) {
    let node;
    try {
      node = await bounded(`get node ${name}`, api.readNode({ name }), timeoutMs);
    } catch (e) {
      if ((e as { code?: unknown }).code === 404)
        throw new Error(`node ${name}: no such Node in the API server (is --node its Kubernetes name?)`, { cause: e });
      throw e;
    }
    const current = (node.spec?.taints ?? []).map(fromApi);
    const wanted = decide(current);
    if (wanted === undefined) return { wrote: undefined, attempts: attempt };
    const body = { metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints: wanted } };
    try {
      await bounded(`patch node ${name}`, api.patchNode({ name, body }, merge), timeoutMs);
      return { wrote: wanted, attempts: attempt };
    } catch (e) {
      if ((e as { code?: unknown }).code !== 409) throw e;
      if (attempt >= MAX_ATTEMPTS)
        throw new Error(`node ${name}: its taints changed under every one of ${MAX_ATTEMPTS} attempts (409 Conflict); trying again at the next resync`, {
          cause: e,
        });
    }
  }
}

function fromApi(t: V1Taint): Taint {
  const at = t.timeAdded as unknown;
  const timeAdded = at instanceof Date ? at.toISOString().replace(/\.\d{3}Z$/, 'Z') : typeof at === 'string' ? at : undefined;
  return { key: t.key, effect: t.effect, ...(t.value !== undefined ? { value: t.value } : {}), ...(timeAdded !== undefined ? { timeAdded } : {}) };
}

function bounded<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer from the API server within ${ms} ms`)), ms);
    timer.unref();
  });
  p.catch(() => undefined);
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

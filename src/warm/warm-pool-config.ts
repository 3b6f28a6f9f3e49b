import type { Family } from '../ip/addr.js';

/** Sizing and timing of one warm pool (one address family; see warm-pool.ts). */
export interface WarmPoolConfig {
  /** Family of every address the pool holds: a dual-stack node runs one pool per family. */
  readonly family: Family;
  /** Idle addresses `plan` tops the pool up to (Terway `min_pool_size`). */
  readonly minIdle: number;
  /** Idle addresses above this are returned by `plan` once past their cooldown (`max_pool_size`). */
  readonly maxIdle: number;
  /** Most addresses the pool holds at once: idle + in use + sticky + refills + returns in flight. */
  readonly capacity: number;
  /** A released address is handed to another pod only this long after its release. */
  readonly cooldownMs: number;
  /** A sticky pod's released address waits this long for that pod; 0 turns stickiness off. */
  readonly stickyForMs: number;
}

/** The sizing and timing every pool of a node shares: WarmPoolConfig but the family. */
export type WarmSizing = Omit<WarmPoolConfig, 'family'>;

/** A WarmPoolConfig field out of bounds; carries the field and its value (and, for an order, the field it must not exceed and that one's value). */
export class WarmPoolConfigError extends RangeError {
  override readonly name = 'WarmPoolConfigError';
  constructor(
    readonly field: keyof WarmPoolConfig,
    readonly value: unknown,
    requirement: string,
    readonly bound?: { readonly field: keyof WarmPoolConfig; readonly value: number },
  ) {
    super(`Cannot create WarmPool as '${field}' ${requirement}: current value is ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`);
  }
}

/** Terway's checks (`NewSimpleObjectPool`): every count and duration a non-negative safe integer, `minIdle ≤ maxIdle ≤ capacity`. */
function checkSizing(c: WarmSizing): void {
  for (const field of ['minIdle', 'maxIdle', 'capacity', 'cooldownMs', 'stickyForMs'] as const) {
    const v: unknown = c[field];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw new WarmPoolConfigError(field, v, 'must be a non-negative integer');
    }
  }
  if (c.minIdle > c.maxIdle)
    throw new WarmPoolConfigError('minIdle', c.minIdle, `must not exceed 'maxIdle' (${c.maxIdle})`, { field: 'maxIdle', value: c.maxIdle });
  if (c.maxIdle > c.capacity)
    throw new WarmPoolConfigError('maxIdle', c.maxIdle, `must not exceed 'capacity' (${c.capacity})`, { field: 'capacity', value: c.capacity });
}

/**
 * The one check of a node's warm pool sizing (the service's, at construction; the CLI's and
 * the config file's, which map the field to the flag or key): checkSizing's rules, and a
 * capacity of at least one address. A frozen copy; WarmPoolConfigError naming the first
 * failing field.
 */
export function validateWarmSizing(c: WarmSizing): WarmSizing {
  checkSizing(c);
  if (c.capacity < 1) throw new WarmPoolConfigError('capacity', c.capacity, 'must be at least 1 (the warm pool must hold at least one address)');
  const { minIdle, maxIdle, capacity, cooldownMs, stickyForMs } = c;
  return Object.freeze({ minIdle, maxIdle, capacity, cooldownMs, stickyForMs });
}

/**
 * A frozen copy of one pool's config (WarmPool's own guard; an empty pool of capacity 0 is
 * allowed here): the family 4 or 6, and checkSizing's rules. Throws WarmPoolConfigError
 * naming the first failing field.
 */
export function validateWarmPoolConfig(c: WarmPoolConfig): WarmPoolConfig {
  if (c.family !== 4 && c.family !== 6) throw new WarmPoolConfigError('family', c.family, 'must be 4 or 6');
  checkSizing(c);
  const { family, minIdle, maxIdle, capacity, cooldownMs, stickyForMs } = c;
  return Object.freeze({ family, minIdle, maxIdle, capacity, cooldownMs, stickyForMs });
}

/**
 * Argument checks every back end runs before touching its engine, so that all of them reject
 * the same calls the same way (etcd would reject some of these itself, with its own words).
 * Bad arguments are programming errors: built-in TypeError/RangeError, not store errors.
 */
import type { Compare, ListOptions, Op } from './store.js';

/** etcd's default --max-txn-ops: the most compares, and the most ops, one txn may carry. */
export const MAX_TXN_OPS = 128;

// In /u mode this matches only surrogates that are not part of a pair: such strings cannot
// be stored as UTF-8 and would come back changed.
const LONE_SURROGATE = /\p{Surrogate}/u;

/** A key must be a non-empty, well-formed Unicode string. */
export function checkKey(key: string, what = 'key'): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(`Cannot use the datastore as '${what}' must be a non-empty string: current value is ${JSON.stringify(key)}`);
  }
  checkWellFormed(key, what);
}

/** A list prefix may be empty (every key) but must be well-formed. */
export function checkPrefix(prefix: string): void {
  if (typeof prefix !== 'string') {
    throw new TypeError(`Cannot list the datastore as 'prefix' must be a string: current value is ${String(prefix)}`);
  }
  checkWellFormed(prefix, 'prefix');
}

/** `limit` a non-negative integer, `after` a well-formed string. */
export function checkListOptions(options: ListOptions | undefined): void {
  if (options?.limit !== undefined && (!Number.isSafeInteger(options.limit) || options.limit < 0)) {
    throw new RangeError(`Cannot list the datastore as 'limit' must be a non-negative integer: current value is ${options.limit}`);
  }
  if (options?.after !== undefined) checkWellFormed(options.after, 'after');
}

/**
 * Compares name keys and non-negative integer revisions; ops name each key at most once
 * (etcd refuses a txn that writes one key twice) and carry well-formed string values; at
 * most MAX_TXN_OPS compares and MAX_TXN_OPS ops.
 */
export function checkTxn(compares: readonly Compare[], ops: readonly Op[]): void {
  if (compares.length > MAX_TXN_OPS || ops.length > MAX_TXN_OPS) {
    throw new RangeError(
      `Cannot run a datastore txn with more than ${MAX_TXN_OPS} compares or ops: current value is ${compares.length} compares, ${ops.length} ops`,
    );
  }
  for (const c of compares) {
    checkKey(c.key, 'compare key');
    if (!Number.isSafeInteger(c.rev) || c.rev < 0) {
      throw new RangeError(`Cannot run a datastore txn as compare 'rev' of ${JSON.stringify(c.key)} must be a non-negative integer: current value is ${c.rev}`);
    }
  }
  const seen = new Set<string>();
  for (const op of ops) {
    checkKey(op.key, `${op.type} key`);
    if (seen.has(op.key)) {
      throw new TypeError(`Cannot run a datastore txn that writes one key twice: duplicate key ${JSON.stringify(op.key)}`);
    }
    seen.add(op.key);
    if (op.type === 'put') {
      if (typeof op.value !== 'string') {
        throw new TypeError(`Cannot put ${JSON.stringify(op.key)} as 'value' must be a string: current value is ${String(op.value)}`);
      }
      checkWellFormed(op.value, 'value');
    } else if (op.type !== 'delete') {
      throw new TypeError(
        `Cannot run a datastore txn as op 'type' must be "put" or "delete": current value is ${JSON.stringify((op as { type: unknown }).type)}`,
      );
    }
  }
}

/** Whether `s` is well-formed Unicode (no lone surrogate): what every key and value must be. */
export function isWellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

function checkWellFormed(s: string, what: string): void {
  if (!isWellFormed(s)) {
    throw new TypeError(`Cannot use the datastore as '${what}' must be well-formed Unicode: it holds a lone surrogate`);
  }
}

/** Every key of a getMany checked as a key; an array. */
export function checkKeys(keys: readonly string[]): void {
  if (!Array.isArray(keys)) {
    throw new TypeError(`Cannot read the datastore as 'keys' must be an array: current value is ${String(keys)}`);
  }
  for (const key of keys) checkKey(key);
}

/** A watch prefix as a list prefix; `fromRevision` a positive integer. */
export function checkWatch(prefix: string, fromRevision: number): void {
  checkPrefix(prefix);
  if (!Number.isSafeInteger(fromRevision) || fromRevision < 1) {
    throw new RangeError(`Cannot watch the datastore as 'fromRevision' must be a positive integer: current value is ${fromRevision}`);
  }
}

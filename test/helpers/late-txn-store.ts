/**
 * A real store whose next matching transaction is held back and its caller told
 * StoreUnavailableError (the outcome unknown), as when a member is paused or cut off with the
 * request in its receive buffer; `land()` later applies it to the real store, as that member
 * does once it runs again (same compares, evaluated then). Before a matching txn, `before` can
 * run a step first (to land a held txn just ahead of it). Everything else passes through.
 */
import { StoreUnavailableError, type Compare, type Op, type Store, type TxnResult } from '../../src/store/index.js';
import { withTxn } from './txn-store.js';

export interface HeldTxn {
  readonly ops: readonly Op[];
  /** Applies the held txn now; its result (succeeded false: a compare failed). */
  land(): Promise<TxnResult>;
}

export interface LateTxnStore extends Store {
  /** Holds back the next txn whose ops `match`; resolves once it was held. */
  holdNext(match: (ops: readonly Op[]) => boolean): Promise<HeldTxn>;
  /** Runs `step` before the next txn whose ops `match` is sent. */
  before(match: (ops: readonly Op[]) => boolean, step: () => Promise<void>): void;
}

export function lateTxnStore(inner: Store): LateTxnStore {
  let hold: { match: (ops: readonly Op[]) => boolean; held: (t: HeldTxn) => void } | undefined;
  let step: { match: (ops: readonly Op[]) => boolean; run: () => Promise<void> } | undefined;
  const store = withTxn(inner, async (c: readonly Compare[], ops: readonly Op[]) => {
    const s = step;
    if (s !== undefined && s.match(ops)) {
      step = undefined;
      await s.run();
    }
    const h = hold;
    if (h !== undefined && h.match(ops)) {
      hold = undefined;
      h.held({ ops, land: () => inner.txn(c, ops) });
      throw new StoreUnavailableError(inner.url, 'test: the txn is held in a member that stopped answering');
    }
    return inner.txn(c, ops);
  });
  return Object.assign(store, {
    holdNext: (match: (ops: readonly Op[]) => boolean) => new Promise<HeldTxn>((held) => (hold = { match, held })),
    before: (match: (ops: readonly Op[]) => boolean, run: () => Promise<void>) => void (step = { match, run }),
  });
}

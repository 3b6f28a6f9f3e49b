/**
 * A real store whose next matching transaction commits and then "loses its answer": the txn is
 * applied by the real store, and the caller gets StoreUnavailableError, as when a timeout or a
 * reset comes after the request was sent. Everything else passes through.
 */
import { StoreUnavailableError, type Op, type Store } from '../../src/store/index.js';
import { withTxn } from './txn-store.js';

export interface LostAnswerStore extends Store {
  /** The next txn whose ops `match` commits, then throws StoreUnavailableError; resolves with its ops once that happened. */
  loseNext(match: (ops: readonly Op[]) => boolean): Promise<readonly Op[]>;
}

export function lostAnswerStore(inner: Store): LostAnswerStore {
  let armed: { match: (ops: readonly Op[]) => boolean; done: (ops: readonly Op[]) => void } | undefined;
  const store = withTxn(inner, async (c, ops) => {
    const a = armed;
    const r = await inner.txn(c, ops);
    if (a !== undefined && r.succeeded && a.match(ops)) {
      armed = undefined;
      a.done(ops);
      throw new StoreUnavailableError(inner.url, 'test: the answer was lost after the txn committed');
    }
    return r;
  });
  return Object.assign(store, { loseNext: (match: (ops: readonly Op[]) => boolean) => new Promise<readonly Op[]>((done) => (armed = { match, done })) });
}

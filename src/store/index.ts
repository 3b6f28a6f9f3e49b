export type { Compare, Entry, ListOptions, Op, Store, TxnResult, WatchEvent, WatchOptions } from './store.js';
export { StoreCompactedError, StoreError, StoreMissingError, StoreUnavailableError, StoreUrlError } from './errors.js';
export { listAll, listAllWithRevision, LIST_PAGE, type Listing } from './list-all.js';
export { openStore } from './open-store.js';
export { parseStoreUrl, type EtcdCredentials, type EtcdTlsParams, type StoreTarget } from './parse-store-url.js';
export { redactStoreUrl } from './redact-store-url.js';
export { DEFAULT_TIMEOUT_MS, type StoreOptions } from './store-options.js';
export { MAX_TXN_OPS } from './check-input.js';
export { compareKeys } from './key-order.js';

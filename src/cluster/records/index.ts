/** src/cluster/records: the public entry other folders import (no reaching into its files). */
export * from './affinity-record.js';
export * from './agent-view-record.js';
export * from './block-record.js';
export * from './handle-record.js';
export * from './history-stamp.js';
export * from './ip-set-record.js';
export * from './ipam-config.js';
export * from './keys.js';
export * from './legacy-handle.js';
export * from './pool-record.js';
export * from './reuse-after.js';
export * from './sticky-hold-id.js';
export * from './absorb-entry.js';
export * from './config-quarantines.js';
export * from './ip-set-errors.js';
export * from './reservation-record.js';

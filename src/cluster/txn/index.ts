/** src/cluster/txn: the public entry other folders import (no reaching into its files). */
export * from './assign.js';
export * from './node-lock.js';
export * from './release.js';
export * from './config-txn.js';
export * from './sticky-hold.js';
export * from './warm-handles.js';
export * from './assign-group.js';
export * from './release-group.js';
export * from './node-allocations.js';

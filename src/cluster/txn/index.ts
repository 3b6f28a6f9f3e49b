/** src/cluster/txn: the public entry other folders import (no reaching into its files). */
export * from './assign.js';
export * from './node-lock.js';
export * from './pool-quarantine.js';
export * from './release.js';
export * from './config-txn.js';
export * from './read-keys.js';
export * from './sticky-hold.js';
export * from './warm-handles.js';

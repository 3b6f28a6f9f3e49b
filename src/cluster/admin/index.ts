/** src/cluster/admin: the public entry other folders import (no reaching into its files). */
export * from './pools.js';
export * from './gc-findings.js';
export * from './gc-node.js';
export * from './ip-sets.js';
export * from './pool-drain.js';
export * from './pool-resize.js';
export * from './pool-settings.js';
export * from './settings.js';

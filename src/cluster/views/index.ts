/** src/cluster/views: the public entry other folders import (no reaching into its files). */
export * from './cluster-snapshot.js';
export * from './node-cache-file.js';
export * from './node-headroom.js';
export * from './node-headroom-load.js';
export * from './view-cache.js';
export * from './allocations.js';
export * from './node-view.js';
export * from './own-blocks.js';
export * from './taken-by-pod.js';
export * from './usage.js';
export * from './utilisation.js';
export * from './absorb-entry.js';
export * from './ipam-context.js';
export * from './read-keys.js';
export * from './handle-addresses.js';
export * from './handles-of-pod.js';

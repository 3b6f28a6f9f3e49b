/** src/cluster/service: the public entry other folders import (no reaching into its files). */
export * from './cluster-host.js';
export * from './cluster-ipam.js';

/** src/cluster/admin: the public entry other folders import (no reaching into its files). */
export * from './pools.js';

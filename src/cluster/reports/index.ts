/** src/cluster/reports: the public entry other folders import (no reaching into its files). */
export * from './check.js';
export * from './sticky-holds.js';
export * from './empty-orphans.js';

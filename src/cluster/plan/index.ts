/** src/cluster/plan: the public entry other folders import (no reaching into its files). */
export * from './placement-request.js';
export * from './plan-assign.js';
export * from './plan-release.js';
export * from './sticky-hold-plan.js';

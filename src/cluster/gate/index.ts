/** The write gate: the one way a block, a pool's space or an address's holder is written (write-gate.ts). */
export { commitWrite, type GatedResult, type GatedWrite } from './write-gate.js';
export { GateRefusedError, type GateRefusal } from './gate-refused-error.js';
export type { PoolsView } from './gate-rules.js';

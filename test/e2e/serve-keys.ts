/** Datastore keys the serve e2e tests damage on purpose (re-exported so tests name one module). */
export { handleKey } from '../../src/cluster/records/keys.js';
export { nodeKey } from '../../src/model/node-record.js';

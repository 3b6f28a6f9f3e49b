/**
 * The node-CIDR controller's public surface: the controller itself (in-process, start/stop),
 * its configuration, node-record operations shared by the CLI, the API server and the
 * Kubernetes adapter, and the errors callers branch on. `@kubernetes/client-node` is loaded
 * only when a KubeAdapter starts.
 */
export { NodeCidrController } from './node-cidr-controller.js';
export type { ControllerSummary, NodeCidrControllerOptions } from './controller-options.js';
export { parseControllerConfig, DEFAULT_NODE_MASK, type ControllerConfig, type ControllerFlags } from './controller-config.js';
export { KubeAdapter, type KubeAdapterOptions } from './kube-adapter.js';
export { addNode, type AddNodeInput } from './add-node.js';
export { deleteNode } from './delete-node.js';
export { listNodes, type NodeRecordEntry } from './list-nodes.js';
export { parseNodeLabels } from '../model/node-labels.js';
export { validateNodeName } from '../model/node-name.js';
export { decodeNodeRecord, encodeNodeRecord, nodeKey, NODE_PREFIX, type NodeRecord } from '../model/node-record.js';
export { NODE_CIDR_CLAIM_PREFIX, nodeCidrClaimKey } from './node-cidr-claim.js';
export { CidrClaimedError, CidrNotAvailableError, NodeConflictError, NodeExistsError, UnknownNodeError } from './errors.js';

/**
 * What a long-lived process (the node agent) gives the cluster back end instead of opening the
 * store and reading the node's hint file on every call: an open ClusterIpam per datastore whose
 * hints stay in memory, calls serialised per node (as the node lock does between plugin
 * processes), and ADDs (and DELs) that arrive together combined into one transaction (group commit).
 */
import type { ClusterIpam } from './cluster-ipam.js';
import type { AssignRequest, Assignment } from '../records/index.js';
import type { Released } from '../txn/index.js';

export interface ClusterHost {
  /** Runs `fn` with the long-lived service for `datastore`, after the node's earlier calls. */
  run<T>(datastore: string, node: string, fn: (ipam: ClusterIpam) => Promise<T>): Promise<T>;
  /** Assigns like ClusterIpam.assign; requests of one node that wait together share one transaction. */
  assign(datastore: string, req: AssignRequest): Promise<Assignment[]>;
  /** Releases like ClusterIpam.releaseHandle(handle, node); releases of one node that wait together share one transaction. */
  release(datastore: string, node: string, handle: string): Promise<Released[]>;
}

import { formatPrefix, type Family, type Prefix } from '../ip/index.js';

/** `node add` of a name that already has a record. */
export class NodeExistsError extends Error {
  override readonly name = 'NodeExistsError';
  constructor(readonly node: string) {
    super(`node "${node}" already exists`);
  }
}

/** An operation on a node that has no record. */
export class UnknownNodeError extends Error {
  override readonly name = 'UnknownNodeError';
  constructor(readonly node: string) {
    super(`node "${node}" not found`);
  }
}

/**
 * No free node block is left in a family's cluster CIDRs (Kubernetes' CIDRNotAvailable). Not
 * retried: the node waits until a CIDR is released or a cluster CIDR is added.
 */
export class CidrNotAvailableError extends Error {
  override readonly name = 'CidrNotAvailableError';
  constructor(
    readonly node: string,
    readonly family: Family,
    readonly clusterCidrs: readonly Prefix[],
  ) {
    super(
      `CIDRNotAvailable: node "${node}" cannot get an IPv${family} pod CIDR: no remaining node CIDRs in cluster CIDRs ${clusterCidrs.map(formatPrefix).join(',')}`,
    );
  }
}

/** A compare-and-swap write on a node kept losing to other writers; the bounded retries ran out. */
export class NodeConflictError extends Error {
  override readonly name = 'NodeConflictError';
  constructor(
    readonly node: string,
    readonly attempts: number,
  ) {
    super(`node "${node}": gave up after ${attempts} conflicting datastore writes`);
  }
}

/** A CIDR someone wants recorded for `node` is already claimed by another node. */
export class CidrClaimedError extends Error {
  override readonly name = 'CidrClaimedError';
  constructor(
    readonly node: string,
    readonly cidr: string,
    readonly owner: string,
  ) {
    super(`node "${node}": pod CIDR ${cidr} is already claimed by node "${owner}"`);
  }
}

import { formatPrefix, type Prefix } from '../ip/index.js';

/**
 * A CIDR handed to a node-CIDR set (occupy, release, exclude) that shares no address with its
 * cluster CIDR, or is of the other family. Text as Kubernetes' cidrset prints it.
 */
export class CidrOutOfRangeError extends RangeError {
  override readonly name = 'CidrOutOfRangeError';
  constructor(
    readonly cidr: Prefix,
    readonly cluster: Prefix,
  ) {
    super(`cidr ${formatPrefix(cidr)} is out the range of cluster cidr ${formatPrefix(cluster)}`);
  }
}

/** One attachment's call to the warm pool and its answer, and the attachment's key. */
import { cniHandleId, MAX_HANDLE_LENGTH } from '../model/handle-id.js';
import type { Placement } from '../model/placement.js';
import type { PodRef } from '../model/pod-ref.js';
import { WarmError } from './warm-error.js';

/**
 * One attachment's call: the network's name, the container and interface, CNI_ARGS, and (ADD)
 * the pod and what its annotations ask for. A placement with pools, addresses or an ip-set
 * (`hasPlacement`) is allocated directly on the datastore (warm-direct.ts); one without, or
 * none, from the idle queue; its `sticky` overrides the pod tracker's decision.
 */
export interface WarmRequest {
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly cniArgs: ReadonlyMap<string, string>;
  readonly pod?: PodRef | undefined;
  readonly placement?: Placement | undefined;
}

/** What an ADD gives the attachment: one address per family, with its block's prefix length and gateway. */
export interface WarmAnswer {
  readonly ips: readonly { readonly address: string; readonly gateway: string }[];
}

/** The attachment's key (its would-be cluster handle); an invalid-config failure when too long. */
export function warmRequestKey(req: WarmRequest, node: string): string {
  const h = cniHandleId(req.network, req.containerId, req.ifname);
  if (h.length > MAX_HANDLE_LENGTH)
    throw new WarmError(
      'invalid-config',
      node,
      `network name, container id and interface name make a key of ${h.length} characters: at most ${MAX_HANDLE_LENGTH}`,
    );
  return h;
}

/**
 * The keys of a config's `ipam` section that pick its back end, read as Go's decoder reads
 * them (case-insensitive): `agent`, a range (`ranges`, or the legacy `subnet`), `datastore`.
 * The one reading of them: dispatch.ts (forward the call to an agent?) and select-backend.ts
 * (which back end serves it) share it.
 */
import { goField } from '../cni/go-decode.js';

export interface IpamKeys {
  /** `ipam.agent` as written (a socket path when well-formed). */
  readonly agent: unknown;
  readonly hasRanges: boolean;
  readonly hasDatastore: boolean;
}

export function ipamKeys(ipam: Readonly<Record<string, unknown>>): IpamKeys {
  return {
    agent: goField(ipam, 'agent'),
    hasRanges: goField(ipam, 'ranges') !== undefined || goField(ipam, 'subnet') !== undefined,
    hasDatastore: goField(ipam, 'datastore') !== undefined,
  };
}

/**
 * Maps what the cluster back end throws to the CNI error the plugin prints: unreachable
 * datastore and exhausted CAS retries are transient (11, try again later — or, for STATUS,
 * 50 not available); no free address is 100; an unavailable specific address 101; no usable
 * pool 7 (the network config and the pools disagree); a datastore that answers with something
 * unusable (a corrupt or read-only SQLite file) 5, I/O failure. The message always names the data.
 */
import { CniCode, CniError } from '../cni/errors.js';
import { StoreError, StoreUnavailableError, StoreUrlError } from '../store/errors.js';
import { AddressUnavailableError, ContentionError, NoPoolError, PoolExhaustedError } from './errors.js';

export function cniErrorOf(e: unknown, verb?: string): CniError {
  if (e instanceof CniError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  const transient = verb === 'STATUS' ? CniCode.NotAvailable : CniCode.TryAgainLater;
  if (e instanceof StoreUnavailableError || e instanceof ContentionError) return new CniError(transient, msg);
  if (e instanceof PoolExhaustedError) return new CniError(verb === 'STATUS' ? CniCode.NotAvailable : CniCode.Exhausted, msg);
  if (e instanceof AddressUnavailableError) return new CniError(CniCode.AddressUnavailable, msg);
  if (e instanceof NoPoolError) return new CniError(verb === 'STATUS' ? CniCode.NotAvailable : CniCode.InvalidConfig, msg);
  if (e instanceof StoreUrlError) return new CniError(CniCode.InvalidConfig, `ipam.datastore: ${msg}`);
  if (e instanceof StoreError) return new CniError(verb === 'STATUS' ? CniCode.NotAvailable : CniCode.IoFailure, msg);
  return new CniError(CniCode.Internal, msg);
}

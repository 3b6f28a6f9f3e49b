/**
 * The one table from what a service throws to the CNI error the plugin prints. Services throw
 * typed errors whose `failure` (src/model/failure.ts) says what kind they are:
 * transient (unreachable datastore, exhausted CAS retries, a busy lock) → 11, try again later —
 * or, for STATUS, 50 not available; no free address → 100 (50 for STATUS); an unavailable
 * specific address → 101; what a CHECK finds not held → 102; no usable pool → 7 (50 for STATUS); a bad datastore URL → 7; a
 * file-system failure → 5; a datastore answering with something unusable (corrupt or read-only
 * SQLite file) → 5 (50 for STATUS); a wrong config value → 7; a service not ready yet → 11 (50 for
 * STATUS); an attachment not holding what CHECK names → 102. A CniError is kept; any other errno error is 5, anything else 999.
 * The message is the error's own (it names the data); never a stack.
 */
import { CniCode, CniError } from './errors.js';
import { failureOf } from '../model/failure.js';

export function cniErrorOf(e: unknown, verb?: string): CniError {
  if (e instanceof CniError) return e;
  if (!(e instanceof Error)) return new CniError(CniCode.Internal, String(e));
  const msg = e.message;
  const status = verb === 'STATUS';
  switch (failureOf(e)) {
    case 'transient':
      return new CniError(status ? CniCode.NotAvailable : CniCode.TryAgainLater, msg);
    case 'exhausted':
      return new CniError(status ? CniCode.NotAvailable : CniCode.Exhausted, msg);
    case 'address-unavailable':
      return new CniError(CniCode.AddressUnavailable, msg);
    case 'not-found':
      return new CniError(CniCode.NotFound, msg);
    case 'no-pool':
      return new CniError(status ? CniCode.NotAvailable : CniCode.InvalidConfig, msg);
    case 'datastore-url':
      return new CniError(CniCode.InvalidConfig, `ipam.datastore: ${msg}`);
    case 'io':
      return new CniError(CniCode.IoFailure, msg);
    case 'datastore':
      return new CniError(status ? CniCode.NotAvailable : CniCode.IoFailure, msg);
    case 'invalid-config':
      return new CniError(CniCode.InvalidConfig, msg);
    case 'not-ready':
      return new CniError(status ? CniCode.NotAvailable : CniCode.TryAgainLater, msg);
    case undefined:
      break;
  }
  const code = (e as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return new CniError(CniCode.IoFailure, msg);
  return new CniError(CniCode.Internal, msg || String(e));
}

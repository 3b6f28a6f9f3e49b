/** CNI error codes (SPEC.md "Error codes"), plus podipam's own (>= 100). */
export const CniCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnv: 4,
  IoFailure: 5,
  DecodeFailure: 6,
  InvalidConfig: 7,
  TryAgainLater: 11,
  NotAvailable: 50,
  NotAvailableDegraded: 51,
  /** podipam: no free address left in the pools/ranges this request may use. */
  Exhausted: 100,
  /** podipam: the requested address is taken or not allowed. */
  AddressUnavailable: 101,
  /** podipam: an attachment was not found (CHECK). */
  NotFound: 102,
  /** podipam: anything not classified (the Go skel's catch-all). */
  Internal: 999,
} as const;

/**
 * An error the CNI plugin reports as the spec's error JSON on stdout
 * (`{"cniVersion", "code", "msg", "details"}`) with a non-zero exit. Everything a plugin verb
 * throws is converted to one of these at the edge; `msg` names the field and value at fault.
 */
export class CniError extends Error {
  override readonly name = 'CniError';
  constructor(
    readonly code: number,
    readonly msg: string,
    readonly details?: string,
    options?: ErrorOptions,
  ) {
    super(msg, options);
  }

  /** The JSON the spec prescribes (empty fields omitted, as the Go library does). */
  toJSON(cniVersion?: string): Record<string, unknown> {
    const o: Record<string, unknown> = {};
    if (cniVersion) o.cniVersion = cniVersion;
    o.code = this.code;
    o.msg = this.msg;
    if (this.details) o.details = this.details;
    return o;
  }
}

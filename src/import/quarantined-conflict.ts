/**
 * The one 'quarantined' import conflict: an address podipam freed less than its pool's
 * `reuseAfter` ago (src/alloc/block-quarantine.ts) is not given to an imported holder before its
 * quarantine ends. The check (check-import-plan.ts, which a dry run and a real run share) and the
 * write (write-import-block.ts, for a release between the check and the write) both decide with
 * `quarantineEndOf` and word it with `quarantinedConflict`.
 */
import type { Block } from '../alloc/block.js';
import { quarantinedOrdinals } from '../alloc/block-quarantine.js';
import type { ImportConflict } from './import-plan.js';

/** When ordinal `o` of `block` leaves its quarantine under `reuseAfterMs` at `now` (epoch ms); undefined: it is not quarantined. */
export function quarantineEndOf(block: Block, o: number, reuseAfterMs: number, now: number): number | undefined {
  return quarantinedOrdinals(block, { reuseAfterMs, now }).get(o);
}

/** The conflict for address `ip` of pool `pool`, quarantined until `end` (epoch ms). */
export function quarantinedConflict(ip: string, pool: string, end: number): ImportConflict {
  const until = new Date(end).toISOString();
  return {
    kind: 'quarantined',
    subject: ip,
    detail: `${ip} was released in podipam recently and is quarantined until ${until} (pool "${pool}" reuseAfter): not given to a new holder before then (run the import again after it)`,
  };
}

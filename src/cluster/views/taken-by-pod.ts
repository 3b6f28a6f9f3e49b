/**
 * A refusal for an address another handle holds, told as the pod holding it: the holder's
 * handle record names its namespace/pod (when the runtime named them), so the message reads
 * `held by pod NS/NAME (handle "…")`. Runs only on the refusal path (one read), never on a
 * successful assignment. With `placedBy`, the annotation that asked for the address is named too.
 */
import { formatPodRef } from '../../model/pod-ref.js';
import { AddressUnavailableError, decodeHandle, handleKey, type AssignRequest } from '../records/index.js';
import type { IpamContext } from './ipam-context.js';

export async function takenByPod(ctx: IpamContext, req: AssignRequest, e: unknown): Promise<unknown> {
  if (!(e instanceof AddressUnavailableError) || e.reason !== 'taken' || e.holder === undefined) return e;
  let pod: string | undefined;
  try {
    const entry = await ctx.store.get(handleKey(e.holder));
    const rec = entry ? decodeHandle(entry) : undefined;
    if (rec?.namespace !== undefined && rec.pod !== undefined) pod = formatPodRef({ namespace: rec.namespace, name: rec.pod });
  } catch {
    // The refusal stands as it is: a holder that cannot be read is still the holder.
  }
  const held = pod ? `it is held by pod ${pod} (handle "${e.holder}")` : e.detail;
  const asked = req.placedBy
    ? ` (asked for by annotation ${req.placedBy.source.annotation}=${JSON.stringify(req.placedBy.source.value)} on ${req.placedBy.source.on})`
    : '';
  if (!pod && !asked) return e;
  return new AddressUnavailableError(e.address, 'taken', held + asked, e.holder);
}

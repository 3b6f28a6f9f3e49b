import { CniCode, CniError } from '../cni/errors.js';
import type { Attachment } from '../cni/types.js';
import { goField, isObject, jsonTypeName } from '../cni/go-decode.js';

const KEY = 'cni.dev/valid-attachments';
/** The name the tagged spec-v1.1.0 text used; libcni sends both with identical content. */
const LEGACY_KEY = 'cni.dev/attachments';

/**
 * The attachments a GC must keep, from `cni.dev/valid-attachments` (else the legacy
 * `cni.dev/attachments`). `null` is the empty list (Go marshals an empty slice so), meaning
 * "nothing is valid". When neither key is present the config is rejected (code 7) rather than
 * read as "delete everything": a GC without the list was not sent by a runtime.
 */
export function validAttachments(raw: Readonly<Record<string, unknown>>): Attachment[] {
  let key = KEY;
  let list = raw[KEY];
  if (list === undefined) {
    key = LEGACY_KEY;
    list = raw[LEGACY_KEY];
  }
  if (list === undefined) {
    throw new CniError(CniCode.InvalidConfig, `GC needs the "${KEY}" list of attachments to keep`);
  }
  if (list === null) return [];
  if (!Array.isArray(list)) {
    throw new CniError(CniCode.InvalidConfig, `${key}: must be an array, got ${jsonTypeName(list)}`);
  }
  return list.map((a, i) => {
    const id = isObject(a) ? goField(a, 'containerID') : undefined;
    const ifname = isObject(a) ? goField(a, 'ifname') : undefined;
    if (typeof id !== 'string' || typeof ifname !== 'string') {
      throw new CniError(CniCode.InvalidConfig, `${key}[${i}]: must be {"containerID": string, "ifname": string}, got ${JSON.stringify(a)}`);
    }
    return { containerId: id, ifname };
  });
}

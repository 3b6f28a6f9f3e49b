/**
 * Name checks for the identifiers that become datastore key segments. Each throws TypeError
 * naming the field and the value; none of them can contain "/" (the key separator).
 */

const RESOURCE_NAME = /^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/;
const NODE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;

/** Pool and reservation names: a Kubernetes resource name (lower case, digits, "-", "."; ≤ 253). */
export function checkResourceName(field: string, name: unknown): asserts name is string {
  if (typeof name !== 'string' || !RESOURCE_NAME.test(name)) {
    throw new TypeError(
      `invalid ${field} ${JSON.stringify(name)}: use lower-case letters, digits, "-" and "." (start and end with a letter or digit, at most 253 characters)`,
    );
  }
}

/** Node names: letters, digits, "-", "_", "." (start and end alphanumeric, ≤ 253). */
export function checkNodeName(field: string, name: unknown): asserts name is string {
  if (typeof name !== 'string' || !NODE_NAME.test(name)) {
    throw new TypeError(`invalid ${field} ${JSON.stringify(name)}: use letters, digits, "-", "_" and "." (start and end with a letter or digit, at most 253 characters)`);
  }
}

/** Handles: 1–1024 printable characters without "/" or white space (a CNI handle is "<network>:<containerID>:<ifname>", handle-id.ts). */
export function checkHandle(field: string, handle: unknown): asserts handle is string {
  // eslint-disable-next-line no-control-regex
  if (typeof handle !== 'string' || handle.length === 0 || handle.length > 1024 || /[\s/\u0000-\u001f\u007f]/.test(handle)) {
    throw new TypeError(`invalid ${field} ${JSON.stringify(handle)}: a handle is 1-1024 printable characters without "/" or white space`);
  }
}

import { CniCode, CniError } from './errors.js';
import type { NetConf } from './types.js';
import { goField, isObject, jsonTypeName } from './go-decode.js';
import { validateNetworkName } from './skel-env.js';

/**
 * Decodes stdin as the Go skel's `validateConfig` does: JSON (code 6 `error unmarshall network
 * config: …`), then `name` present (code 7 `missing network name`) and well-formed (code 7).
 * Returns the parsed object; the version and `ipam` are checked by `toNetConf`.
 */
export function decodeConfig(stdin: string): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = JSON.parse(stdin);
  } catch (e) {
    let msg = (e as Error).message;
    // Go's text for the commonest case, empty or truncated stdin (V8 words it several ways).
    const pos = /at position (\d+)/.exec(msg);
    if (/^Unexpected end of JSON input/.test(msg) || (pos && Number(pos[1]) >= stdin.trimEnd().length)) {
      msg = 'unexpected end of JSON input';
    }
    throw new CniError(CniCode.DecodeFailure, `error unmarshall network config: ${msg}`, undefined, { cause: e });
  }
  if (!isObject(raw)) {
    throw new CniError(CniCode.DecodeFailure, `error unmarshall network config: expected a JSON object, got ${jsonTypeName(raw)}`);
  }
  const name = goField(raw, 'name');
  if (name !== undefined && typeof name !== 'string') {
    throw new CniError(
      CniCode.DecodeFailure,
      `error unmarshall network config: field "name" must be a string, got ${jsonTypeName(name)} ${JSON.stringify(name)}`,
    );
  }
  if (!name) throw new CniError(CniCode.InvalidConfig, 'missing network name');
  validateNetworkName(name);
  return raw;
}

/**
 * The config's `cniVersion` (missing or null ⇒ "", which the spec reads as 0.1.0). A non-string
 * value is a decode failure (code 6), as in Go.
 */
export function configVersion(raw: Readonly<Record<string, unknown>>): string {
  const v = goField(raw, 'cniVersion');
  if (v === undefined) return '';
  if (typeof v !== 'string') {
    throw new CniError(
      CniCode.DecodeFailure,
      `decoding version from network config: field "cniVersion" must be a string, got ${jsonTypeName(v)} ${JSON.stringify(v)}`,
    );
  }
  return v;
}

/**
 * The typed view back ends get (`source`: the text `raw` was parsed from). `ipam` must be an object: missing is host-local's
 * `IPAM config missing 'ipam' key` (code 7 here), another type names the type.
 */
export function toNetConf(raw: Readonly<Record<string, unknown>>, cniVersion: string, source?: string): NetConf {
  const ipam = goField(raw, 'ipam');
  if (ipam === undefined) throw new CniError(CniCode.InvalidConfig, "IPAM config missing 'ipam' key");
  if (!isObject(ipam)) {
    throw new CniError(CniCode.InvalidConfig, `ipam: must be an object, got ${jsonTypeName(ipam)} ${JSON.stringify(ipam)}`);
  }
  const type = goField(raw, 'type');
  const args = goField(raw, 'args');
  const runtimeConfig = goField(raw, 'runtimeConfig');
  return {
    cniVersion,
    name: goField(raw, 'name') as string,
    type: typeof type === 'string' ? type : undefined,
    ipam,
    args: isObject(args) ? args : undefined,
    runtimeConfig: isObject(runtimeConfig) ? runtimeConfig : undefined,
    prevResult: goField(raw, 'prevResult'),
    raw,
    ...(source !== undefined ? { source } : {}),
  };
}

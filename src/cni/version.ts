/** CNI spec versions podipam speaks, and version arithmetic as the Go library does it. */

/** Every spec version the plugin accepts in `cniVersion` (exact string match, as libcni). */
export const SUPPORTED_VERSIONS = ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;

/** The version podipam implements; what VERSION reports as its own `cniVersion`. */
export const CURRENT_VERSION = '1.1.0';

/** True when `v` is one of SUPPORTED_VERSIONS. */
export function isSupportedVersion(v: string): boolean {
  return (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

/** Versions parsed before (every call compares its config's): at most PARSED_MAX, then no more are kept. */
const parsed = new Map<string, readonly [number, number, number]>();
const PARSED_MAX = 64;

/**
 * Parses "major.minor.micro" like Go's version.ParseVersion: "" means 0.1.0, missing parts are
 * 0, more than three parts or a non-integer part is an error (thrown as TypeError). A version
 * parsed before is answered from `parsed`: no split array on a call's path (V8 had thrown this
 * function's optimised code away at a split array of another map).
 */
export function parseVersion(v: string): readonly [number, number, number] {
  const known = parsed.get(v);
  if (known !== undefined) return known;
  const out = Object.freeze(splitVersion(v));
  if (parsed.size < PARSED_MAX) parsed.set(v, out);
  return out;
}

function splitVersion(v: string): [number, number, number] {
  if (v === '') return [0, 1, 0];
  const parts = v.split('.');
  if (parts.length >= 4) throw new TypeError(`invalid version ${JSON.stringify(v)}: too many parts`);
  const names = ['major', 'minor', 'micro'];
  const out: [number, number, number] = [0, 0, 0];
  parts.forEach((p, i) => {
    if (!/^[+-]?[0-9]+$/.test(p)) {
      throw new TypeError(`failed to convert ${names[i]} version part ${JSON.stringify(p)}: invalid syntax`);
    }
    out[i] = Number(p);
  });
  return out;
}

/** `a >= b` as Go's version.GreaterThanOrEqualTo; throws TypeError for an unparsable version. */
export function versionAtLeast(a: string, b: string): boolean {
  const x = parseVersion(a);
  const y = parseVersion(b);
  for (let i = 0; i < 3; i++) {
    if (x[i]! !== y[i]!) return x[i]! > y[i]!;
  }
  return true;
}

/**
 * The VERSION answer, as the Go library encodes it (compact JSON and a newline). Spelled out here
 * so that VERSION loads no JSON encoder: the values are plain ASCII, where Go's and
 * JSON.stringify's output agree.
 */
export function versionAnswer(): string {
  return `${JSON.stringify({ cniVersion: CURRENT_VERSION, supportedVersions: SUPPORTED_VERSIONS })}\n`;
}

/**
 * A plugin's ADD result read as libcni reads it: `cniVersion` filled in from the config when the
 * plugin left it out (fixupResultVersion), then decoded into the Go struct of that version —
 * which drops unknown keys and empty `omitempty` members — and converted on demand
 * (GetAsVersion) between 0.3.0/0.3.1/0.4.0 and 1.0.0/1.1.0. The values keep Go's struct field
 * order, so `goMarshal` of one is what libcni sends as `prevResult`.
 */
import type { GoJsonValue } from '../cni/go-json.js';
import { isObject } from '../cni/go-decode.js';

type Obj = Record<string, unknown>;
/** A result in its Go struct shape; `cniVersion` always set. */
export type GoResult = { readonly cniVersion: string } & { readonly [k: string]: GoJsonValue };

const V100 = ['1.0.0', '1.1.0'];
const V040 = ['0.3.0', '0.3.1', '0.4.0'];
const V020 = ['0.1.0', '0.2.0'];

/** Thrown for output that is no result of a known version; the caller names the plugin. */
export class ResultFormatError extends Error {
  override readonly name = 'ResultFormatError';
}

function str(o: Obj, k: string, required = false): string | undefined {
  const v = o[k];
  if (v === undefined || v === null || v === '') {
    if (required) throw new ResultFormatError(`"${k}" missing`);
    return undefined;
  }
  if (typeof v !== 'string') throw new ResultFormatError(`"${k}" must be a string, got ${JSON.stringify(v)}`);
  return v;
}

function int(o: Obj, k: string, keepZero: boolean): number | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new ResultFormatError(`"${k}" must be an integer, got ${JSON.stringify(v)}`);
  return v === 0 && !keepZero ? undefined : v;
}

function list(o: Obj, k: string): Obj[] | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every(isObject)) throw new ResultFormatError(`"${k}" must be an array of objects`);
  return v.length ? v : undefined;
}

function strings(o: Obj, k: string): string[] | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ResultFormatError(`"${k}" must be an array of strings`);
  return v.length ? v : undefined;
}

function route(r: Obj): GoJsonValue {
  return {
    dst: str(r, 'dst', true),
    gw: str(r, 'gw'),
    mtu: int(r, 'mtu', false),
    advmss: int(r, 'advmss', false),
    priority: int(r, 'priority', false),
    table: int(r, 'table', true),
    scope: int(r, 'scope', true),
  };
}

function dns(o: Obj): { [k: string]: GoJsonValue } {
  const d = o.dns;
  if (d === undefined || d === null) return {};
  if (!isObject(d)) throw new ResultFormatError('"dns" must be an object');
  return { nameservers: strings(d, 'nameservers'), domain: str(d, 'domain'), search: strings(d, 'search'), options: strings(d, 'options') };
}

const isEmpty = (o: { [k: string]: GoJsonValue }) => Object.values(o).every((v) => v === undefined);
const family = (address: string) => (address.includes(':') ? '6' : '4');

function shape100(version: string, o: Obj): GoResult {
  const d = dns(o);
  return {
    cniVersion: version,
    interfaces: list(o, 'interfaces')?.map((i) => ({
      name: str(i, 'name') ?? '',
      mac: str(i, 'mac'),
      mtu: int(i, 'mtu', false),
      sandbox: str(i, 'sandbox'),
      socketPath: str(i, 'socketPath'),
      pciID: str(i, 'pciID'),
    })),
    ips: list(o, 'ips')?.map((ip) => ({ interface: int(ip, 'interface', true), address: str(ip, 'address', true), gateway: str(ip, 'gateway') })),
    routes: list(o, 'routes')?.map(route),
    // types100.Result.MarshalJSON drops an empty dns.
    dns: isEmpty(d) ? undefined : d,
  };
}

function shape040(version: string, o: Obj): GoResult {
  return {
    cniVersion: version,
    interfaces: list(o, 'interfaces')?.map((i) => ({ name: str(i, 'name') ?? '', mac: str(i, 'mac'), sandbox: str(i, 'sandbox') })),
    ips: list(o, 'ips')?.map((ip) => {
      const address = str(ip, 'address', true)!;
      return { version: str(ip, 'version') ?? family(address), interface: int(ip, 'interface', true), address, gateway: str(ip, 'gateway') };
    }),
    routes: list(o, 'routes')?.map(route),
    dns: dns(o),
  };
}

function shape020(version: string, o: Obj): GoResult {
  const ipc = (k: string): GoJsonValue => {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    if (!isObject(v)) throw new ResultFormatError(`"${k}" must be an object`);
    return { ip: str(v, 'ip', true), gateway: str(v, 'gateway'), routes: list(v, 'routes')?.map(route) };
  };
  return { cniVersion: version, ip4: ipc('ip4'), ip6: ipc('ip6'), dns: dns(o) };
}

/** Decodes a result object of the version it names. */
export function shapeResult(o: Obj): GoResult {
  const v = o.cniVersion;
  if (typeof v !== 'string' || v === '') throw new ResultFormatError('"cniVersion" missing');
  if (V100.includes(v)) return shape100(v, o);
  if (V040.includes(v)) return shape040(v, o);
  if (V020.includes(v)) return shape020(v, o);
  throw new ResultFormatError(`unsupported CNI result version ${JSON.stringify(v)}`);
}

/** Reads an ADD's stdout (fixupResultVersion + create.Create); throws ResultFormatError. */
export function parseResult(stdout: string, confVersion: string): GoResult {
  let raw: unknown;
  try {
    raw = JSON.parse(stdout);
  } catch (e) {
    throw new ResultFormatError(`not JSON: ${JSON.stringify(stdout.slice(0, 200))}: ${(e as Error).message}`, { cause: e });
  }
  if (raw === null) raw = {};
  if (!isObject(raw)) throw new ResultFormatError(`not a JSON object: ${JSON.stringify(stdout.slice(0, 200))}`);
  const o: Obj = typeof raw.cniVersion === 'string' && raw.cniVersion !== '' ? raw : { ...raw, cniVersion: confVersion || '0.1.0' };
  return shapeResult(o);
}

/** GetAsVersion between the 0.3/0.4 and 1.x shapes; throws ResultFormatError otherwise. */
export function resultAsVersion(r: GoResult, version: string): GoResult {
  if (r.cniVersion === version) return r;
  const from = r as unknown as Obj;
  const to100 = V100.includes(version);
  const to040 = V040.includes(version);
  if ((V100.includes(r.cniVersion) || V040.includes(r.cniVersion)) && (to100 || to040)) {
    const ips = (from.ips as Obj[] | undefined)?.map((ip) => {
      const { version: _v, ...rest } = ip;
      return to040 ? { ...rest, version: family(String(ip.address)) } : rest;
    });
    return to100 ? shape100(version, { ...from, ips }) : shape040(version, { ...from, ips });
  }
  throw new ResultFormatError(`cannot convert a ${r.cniVersion} result to ${version}`);
}

/** The addresses of a result of any version (for listings). */
export function resultAddresses(r: unknown): string[] {
  if (!isObject(r)) return [];
  const out: string[] = [];
  for (const ip of Array.isArray(r.ips) ? r.ips : []) if (isObject(ip) && typeof ip.address === 'string') out.push(ip.address);
  for (const k of ['ip4', 'ip6']) {
    const v = r[k];
    if (isObject(v) && typeof v.ip === 'string') out.push(v.ip);
  }
  return out;
}

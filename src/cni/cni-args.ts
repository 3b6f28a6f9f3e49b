import { CniCode, CniError } from './errors.js';
import { goQuote, goQuoteList } from './go-json.js';

/**
 * Parses CNI_ARGS (`K=V;K2=V2`) as the Go `types.LoadArgs` splits it: on ";" then "=", each
 * pair needing exactly one "="; keys are case-sensitive. The empty string is no args.
 * Throws CniError 4 `ARGS: invalid pair "…"`. A repeated key keeps its last value.
 */
export function parseCniArgs(text: string): Map<string, string> {
  const out = new Map<string, string>();
  if (text === '') return out;
  for (const pair of text.split(';')) {
    const kv = pair.split('=');
    if (kv.length !== 2) throw new CniError(CniCode.InvalidEnv, `ARGS: invalid pair ${goQuote(pair)}`);
    out.set(kv[0]!, kv[1]!);
  }
  return out;
}

/** Go's `UnmarshallableBool`: "1"/"true" and "0"/"false", any case. */
export function parseArgBool(key: string, value: string): boolean {
  const s = value.toLowerCase();
  if (s === '1' || s === 'true') return true;
  if (s === '0' || s === 'false') return false;
  throw new CniError(CniCode.InvalidEnv, `ARGS: error parsing value of pair ${goQuote(`${key}=${value}`)}: boolean unmarshal error: invalid input ${s}`);
}

/**
 * Checks parsed CNI_ARGS against the keys a plugin understands (plus `IgnoreUnknown`, which
 * every Go args struct embeds): unknown keys fail with code 4 `ARGS: unknown args ["K=V"]`
 * unless `IgnoreUnknown` is 1/true — exactly what the Go parser does.
 */
export function checkKnownArgs(args: ReadonlyMap<string, string>, known: readonly string[]): void {
  let ignoreUnknown = false;
  const unknown: string[] = [];
  for (const [k, v] of args) {
    if (k === 'IgnoreUnknown') ignoreUnknown = parseArgBool(k, v);
    else if (!known.includes(k)) unknown.push(`${k}=${v}`);
  }
  if (unknown.length > 0 && !ignoreUnknown) {
    throw new CniError(CniCode.InvalidEnv, `ARGS: unknown args ${goQuoteList(unknown)}`);
  }
}

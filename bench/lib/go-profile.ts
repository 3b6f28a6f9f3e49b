/**
 * A reader of Go's profiles as a Go process serves them at /debug/pprof/ (profile.proto,
 * gzipped): a CPU profile (`profile?seconds=N`) or the allocation profile (`allocs`), each
 * sample as its stack of function names (leaf first, inlined frames expanded) and its values.
 * Enough to say which share of an etcd member's CPU or allocation falls under a function — what
 * the scale bench prints — without Go's own tools, which this machine does not have.
 */
import { gunzipSync } from 'node:zlib';
import { protoFields, type ProtoField } from '../../src/store/etcd/protobuf-wire.js';

export interface GoProfile {
  /** The name of each value of a sample, e.g. ['samples', 'cpu'] or ['alloc_objects', 'alloc_space', 'inuse_objects', 'inuse_space']. */
  readonly sampleTypes: readonly string[];
  readonly samples: readonly { readonly frames: readonly string[]; readonly values: readonly number[] }[];
}

/** A repeated integer field: packed (one length-delimited field of varints) or one varint per element. */
function integers(f: ProtoField): number[] {
  if (f.varint !== undefined) return [Number(f.varint)];
  const out: number[] = [];
  let n = 0;
  let scale = 1;
  for (const b of f.bytes) {
    n += (b & 0x7f) * scale;
    scale *= 128;
    if (b < 0x80) {
      out.push(n);
      n = 0;
      scale = 1;
    }
  }
  if (scale !== 1) throw new Error(`go profile: packed field ${f.no} ends inside a varint`);
  return out;
}

/** Parses a profile (gzipped or not). Throws on bytes that are not one. */
export function readGoProfile(data: Buffer): GoProfile {
  const buf = data[0] === 0x1f && data[1] === 0x8b ? gunzipSync(data) : data;
  const strings: string[] = [];
  const typeIdx: number[] = [];
  const rawSamples: { locs: number[]; values: number[] }[] = [];
  const locations = new Map<number, number[]>(); // id → function ids, leaf first
  const functions = new Map<number, number>(); // id → name's string index
  for (const f of protoFields(buf)) {
    if (f.bytes === undefined) continue;
    if (f.no === 1) {
      for (const g of protoFields(f.bytes)) if (g.no === 1 && g.varint !== undefined) typeIdx.push(Number(g.varint));
    } else if (f.no === 2) {
      const s = { locs: [] as number[], values: [] as number[] };
      for (const g of protoFields(f.bytes)) {
        if (g.no === 1) s.locs.push(...integers(g));
        else if (g.no === 2) s.values.push(...integers(g));
      }
      rawSamples.push(s);
    } else if (f.no === 4) {
      let id = 0;
      const fns: number[] = [];
      for (const g of protoFields(f.bytes)) {
        if (g.no === 1 && g.varint !== undefined) id = Number(g.varint);
        else if (g.no === 4 && g.bytes !== undefined)
          for (const h of protoFields(g.bytes)) if (h.no === 1 && h.varint !== undefined) fns.push(Number(h.varint));
      }
      locations.set(id, fns);
    } else if (f.no === 5) {
      let id = 0;
      let name = 0;
      for (const g of protoFields(f.bytes)) {
        if (g.no === 1 && g.varint !== undefined) id = Number(g.varint);
        else if (g.no === 2 && g.varint !== undefined) name = Number(g.varint);
      }
      functions.set(id, name);
    } else if (f.no === 6) strings.push(f.bytes.toString('utf8'));
  }
  const fnName = (id: number): string => strings[functions.get(id) ?? -1] ?? `?${id}`;
  return {
    sampleTypes: typeIdx.map((i) => strings[i] ?? '?'),
    samples: rawSamples.map((s) => ({ frames: s.locs.flatMap((l) => (locations.get(l) ?? []).map(fnName)), values: s.values })),
  };
}

/**
 * Of value `type` (a name of sampleTypes), the total and the part in samples with a frame whose
 * name contains `part` (each sample counted once however many such frames it has); `count`:
 * those samples' value of `countType` when given (e.g. alloc_objects beside alloc_space).
 */
export function shareUnder(p: GoProfile, part: string, type: string, countType?: string): { total: number; under: number; count: number } {
  const vi = p.sampleTypes.indexOf(type);
  if (vi < 0) throw new Error(`go profile: no sample type ${type} (has ${p.sampleTypes.join(', ')})`);
  const ci = countType === undefined ? -1 : p.sampleTypes.indexOf(countType);
  let total = 0;
  let under = 0;
  let count = 0;
  for (const s of p.samples) {
    const v = s.values[vi] ?? 0;
    total += v;
    if (s.frames.some((f) => f.includes(part))) {
      under += v;
      count += s.values[ci] ?? 0;
    }
  }
  return { total, under, count };
}

import type { Log } from '../log/logger.js';
import { NodeCidrAllocator, type NodeCidrAllocatorConfig, type NodeCidrProposal } from '../alloc/node-cidr-allocator.js';
import { formatPrefix, parsePrefix, type Family, type Prefix } from '../ip/index.js';
import type { NodeRecord } from '../model/node-record.js';

/** A cheap identity for a prefix (formatting IPv6 text is the costly part of a rebuild). */
function keyOf(p: Prefix): string {
  return `${p.family}/${p.len}/${p.base.toString(32)}`;
}

/** The latest version of a node record the controller has seen. */
export interface KnownNode {
  readonly rev: number;
  readonly record: NodeRecord;
  /** record.podCIDRs, parsed (unparsable entries dropped). */
  readonly cidrs: readonly Prefix[];
}

/**
 * The controller's picture of the cluster, pure and synchronous: the newest record seen per
 * node, which node holds each CIDR, the proposals whose write has not answered, and the
 * allocator's bitmaps kept in step with all three. I/O (reads, transactions) is the
 * controller's; this class only applies what they returned.
 */
export class NodeOccupancy {
  readonly #alloc: NodeCidrAllocator;
  readonly #log: Log;
  readonly #known = new Map<string, KnownNode>();
  /** keyOf(CIDR) → the node whose record lists it. */
  readonly #holders = new Map<string, string>();
  /** keyOf(proposal) → proposal, for proposals whose write has not answered. */
  readonly #inflight = new Map<string, Prefix>();
  readonly #warned = new Set<string>();

  constructor(config: NodeCidrAllocatorConfig, log: Log) {
    this.#alloc = new NodeCidrAllocator(config);
    this.#log = log;
  }

  get families(): readonly Family[] {
    return this.#alloc.families;
  }

  get size(): number {
    return this.#known.size;
  }

  clusterCidrs(): Prefix[] {
    return this.#alloc.clusterCidrs();
  }

  /** Grows the cluster (see NodeCidrAllocator.addClusterCidr), then re-occupies held CIDRs it covers. */
  addClusterCidr(cidr: Prefix): void {
    this.#alloc.addClusterCidr(cidr);
    for (const k of this.#known.values()) for (const c of k.cidrs) this.#alloc.occupy(c);
    for (const p of this.#inflight.values()) this.#alloc.occupy(p);
  }

  usage(): { family: Family; size: bigint; used: bigint }[] {
    return this.#alloc.usage();
  }

  known(name: string): KnownNode | undefined {
    return this.#known.get(name);
  }

  /** Known nodes as [name, node]. */
  entries(): IterableIterator<[string, KnownNode]> {
    return this.#known.entries();
  }

  /** Marked deleting, or lacking a CIDR of a configured family. */
  needsWork(name: string): boolean {
    const k = this.#known.get(name);
    return k !== undefined && (k.record.deleting === true || this.#alloc.families.some((f) => !k.cidrs.some((c) => c.family === f)));
  }

  /**
   * Takes in a record read at `rev` if newer than the known one: CIDRs it no longer lists are
   * freed, CIDRs it lists are occupied. `cidrs`, when given, is record.podCIDRs already parsed.
   * Returns needsWork(name).
   */
  observe(name: string, rev: number, record: NodeRecord, cidrs?: readonly Prefix[]): boolean {
    const k = this.#known.get(name);
    if (k && k.rev >= rev) return this.needsWork(name);
    const parsed = cidrs ?? this.#parse(name, record.podCIDRs);
    const now = new Set(parsed.map(keyOf));
    for (const old of k?.cidrs ?? []) {
      const key = keyOf(old);
      if (!now.has(key) && this.#holders.get(key) === name) this.#free(old, key);
    }
    for (const c of parsed) this.#hold(c, name);
    this.#known.set(name, { rev, record, cidrs: parsed });
    return this.needsWork(name);
  }

  /** The node's record is gone: forgets it and frees the CIDRs it held. Returns them (text). */
  vanish(name: string): string[] {
    const k = this.#known.get(name);
    this.#known.delete(name);
    if (!k) return [];
    const freed = k.cidrs.filter((c) => this.#holders.get(keyOf(c)) === name);
    for (const c of freed) this.#free(c, keyOf(c));
    return freed.map(formatPrefix);
  }

  /**
   * Blocks for the known node's missing families (all or nothing), marked used and in flight
   * until settle(). Undefined for an unknown node.
   */
  propose(name: string): NodeCidrProposal | undefined {
    const k = this.#known.get(name);
    if (!k) return undefined;
    const p = this.#alloc.proposeMissing(k.cidrs);
    if (p.ok) for (const a of p.added) this.#inflight.set(keyOf(a), a);
    return p;
  }

  /**
   * The write of `added` answered. Committed: observe() the record it wrote, then settle with
   * no losers. Lost: CIDRs another node claimed (`claimedBy`: cidr → owner) stay used; the
   * rest are freed. Not knowing (store unavailable): settle with none claimed.
   */
  settle(added: readonly Prefix[], claimedBy: ReadonlyMap<string, string> = new Map(), committed = false): void {
    for (const p of added) {
      const key = keyOf(p);
      this.#inflight.delete(key);
      if (committed) continue;
      const owner = claimedBy.size ? claimedBy.get(formatPrefix(p)) : undefined;
      if (owner === undefined) {
        if (!this.#holders.has(key)) this.#alloc.release(p);
      } else if (!this.#holders.has(key)) {
        this.#holders.set(key, owner);
      }
    }
  }

  /**
   * Rebuilds the bitmaps from scratch: every claimed CIDR (`claims`, canonical text), every
   * known node's CIDRs, every proposal in flight. Round-robin positions are kept.
   */
  rebuild(claims: readonly string[]): void {
    this.#alloc.reset();
    this.#holders.clear();
    for (const t of claims) {
      try {
        this.#alloc.occupy(parsePrefix(t));
      } catch {
        // A claim key that is not a CIDR cannot clash with a block handed out here.
      }
    }
    for (const [name, k] of this.#known) for (const c of k.cidrs) this.#hold(c, name);
    for (const p of this.#inflight.values()) this.#alloc.occupy(p);
  }

  /** Frees `cidr` (text) unless a known node or a proposal holds it; true if freed. */
  releaseUnheld(cidr: string): boolean {
    let p: Prefix;
    try {
      p = parsePrefix(cidr);
    } catch {
      return false;
    }
    const key = keyOf(p);
    if (this.#holders.has(key) || this.#inflight.has(key)) return false;
    this.#free(p, key);
    return true;
  }

  #parse(name: string, texts: readonly string[]): Prefix[] {
    const out: Prefix[] = [];
    for (const text of texts) {
      try {
        out.push(parsePrefix(text));
      } catch {
        this.#warnOnce(`${name} ${text}`, 'warn', `skipping pod CIDR ${JSON.stringify(text)} of node ${name}: not a CIDR`);
      }
    }
    return out;
  }

  #hold(p: Prefix, name: string): void {
    if (!this.#alloc.occupy(p)) {
      const t = formatPrefix(p);
      this.#warnOnce(
        `${name} ${t}`,
        'info',
        `node ${name} has pod CIDR ${t} outside the cluster CIDRs ${this.#alloc.clusterCidrs().map(formatPrefix).join(',')}; keeping it`,
      );
    }
    this.#holders.set(keyOf(p), name);
  }

  #free(p: Prefix, key: string): void {
    this.#holders.delete(key);
    if (!this.#inflight.has(key)) this.#alloc.release(p);
  }

  /** Logs `line` (about node `key`'s first word) once per key. */
  #warnOnce(key: string, level: 'info' | 'warn', line: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#log[level]({ node: key.slice(0, key.indexOf(' ')) }, line);
  }
}

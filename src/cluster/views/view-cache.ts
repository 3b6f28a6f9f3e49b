/**
 * The allocator's memory: one cluster snapshot and one NodeView per node, kept for the life
 * of a ClusterIpam (a CLI run, the agent, a benchmark) or saved to a file between CNI plugin
 * runs (see node-cache-file.ts). Everything in it is a hint proven by transaction compares.
 */
import type { Entry } from '../../store/index.js';
import { decodeBlock, encodeBlock, decodeHandle, encodeHandle, CONFIG_KEY, handleKey } from '../records/index.js';
import { type ClusterSnapshot, snapshotFromEntries } from './cluster-snapshot.js';
import { NodeView } from './node-view.js';

const FORMAT = 1;

interface SavedEntry {
  readonly k: string;
  readonly v: string;
  readonly r: number;
}

export class ViewCache {
  snapshot: ClusterSnapshot | undefined;
  readonly #nodes = new Map<string, NodeView>();

  /** The view of `node`, created empty on first use. */
  node(name: string): NodeView {
    let v = this.#nodes.get(name);
    if (v === undefined) this.#nodes.set(name, (v = new NodeView(name)));
    return v;
  }

  /** The view of `node` if one is kept (never creates one). */
  peek(name: string): NodeView | undefined {
    return this.#nodes.get(name);
  }

  /** Forgets everything known about `name` (its next use reloads it from the datastore). */
  forgetNode(name: string): void {
    this.#nodes.delete(name);
  }

  /** Forgets the snapshot (after a failed config compare) so the next call reloads it. */
  invalidateSnapshot(): void {
    this.snapshot = undefined;
  }

  /** Serialises the snapshot and one node's view (what one CNI plugin process needs next time). */
  save(node: string): string {
    const v = this.node(node);
    const e = (x: Entry): SavedEntry => ({ k: x.key, v: x.value, r: x.rev });
    return JSON.stringify({
      format: FORMAT,
      node,
      snapshot: this.snapshot ? { configRev: this.snapshot.configRev, entries: this.snapshot.entries.map(e) } : undefined,
      labels: v.labels,
      blocksLoaded: v.blocksLoaded,
      blocks: [...v.blocks].map(([k, b]) => ({ k, v: encodeBlock(b.block), r: b.rev })),
      handles: [...v.handles].map(([h, x]) => ({ k: h, v: encodeHandle(x.record), r: x.rev })),
      delFenceRev: v.delFenceRev,
    });
  }

  /**
   * Restores what `save` wrote for `node`. Anything that does not decode is dropped (the
   * cache is a hint: an empty cache only costs round trips). Returns false when nothing
   * usable was found.
   */
  restore(node: string, text: string): boolean {
    try {
      const o = JSON.parse(text) as {
        format?: number;
        node?: string;
        snapshot?: { configRev: number; entries: SavedEntry[] };
        labels?: NodeView['labels'];
        blocksLoaded?: boolean;
        blocks?: SavedEntry[];
        handles?: SavedEntry[];
        delFenceRev?: unknown;
      };
      if (o.format !== FORMAT || o.node !== node) return false;
      const entry = (x: SavedEntry): Entry => ({ key: x.k, value: x.v, rev: x.r });
      if (o.snapshot) {
        const all = o.snapshot.entries.map(entry);
        const config = all.find((x) => x.key === CONFIG_KEY);
        this.snapshot = snapshotFromEntries(
          config,
          all.filter((x) => x.key !== CONFIG_KEY),
        );
      }
      const v = this.node(node);
      v.labels = o.labels;
      for (const b of o.blocks ?? []) v.noteBlock(b.k, b.r, decodeBlock(entry(b)));
      v.blocksLoaded = o.blocksLoaded === true;
      for (const h of o.handles ?? []) v.noteHandle(h.k, h.r, decodeHandle(entry({ ...h, k: handleKey(h.k) })));
      if (Number.isSafeInteger(o.delFenceRev) && (o.delFenceRev as number) >= 0) v.delFenceRev = o.delFenceRev as number;
      return true;
    } catch {
      this.snapshot = undefined;
      this.#nodes.delete(node);
      return false;
    }
  }
}

/**
 * What one node's allocator remembers between calls: its labels, the blocks affine to it and
 * the handles it wrote, each with the revision it was read or written at. All of it is a hint:
 * every transaction compares those revisions, and a failed compare returns the current
 * entries, which replace the stale ones. So the steady-state ADD is one transaction with no
 * read, and a stale view costs one extra round trip, never a wrong answer.
 */
import type { Block } from '../../alloc/block.js';
import type { Entry, Store } from '../../store/index.js';
import { decodeBlock, type HandleRecord, affinityPrefix, parseAffinityKey, blockKey } from '../records/index.js';
import { OwnBlocks } from './own-blocks.js';
import { readKeys } from './read-keys.js';

/** A block as last seen: `block` null means known absent (rev 0). */
export interface KnownBlock {
  readonly rev: number;
  readonly block: Block | null;
}

/** Most handle hints kept per node; beyond this the oldest are forgotten (they are only hints). */
export const MAX_HANDLE_HINTS = 2048;

/** Most keys of other nodes' blocks remembered per node (see NodeView.claimedByOthers). */
export const MAX_CLAIMED_HINTS = 1024;

export class NodeView {
  /** Labels from `nodes/<name>` and that record's revision (0 = no record); undefined = not read yet. */
  labels: { readonly rev: number; readonly labels: Readonly<Record<string, string>> } | undefined;
  /** Blocks affine to this node, by block key (indexed: own-blocks.ts). */
  readonly blocks: OwnBlocks;
  /** True once `blocks` was filled from the datastore (affinity list). */
  blocksLoaded = false;
  /** Handles this node wrote, with their record and revision. */
  readonly handles = new Map<string, { readonly rev: number; readonly record: HandleRecord }>();
  /**
   * Keys of blocks this node saw held by another node (a failed claim's compare, a read). Its
   * next claim skips them instead of failing on them again: without it every claim of a node
   * re-paid the misses of its earlier ones, until MAX_CLAIM_MISSES sent it to list every
   * affinity in the cluster (at 20,000 nodes, 51,000 records per list). Only a hint: a block
   * freed since is merely not chosen, and a refusal (no block to claim) forgets the view and
   * proves it on fresh data.
   */
  readonly claimedByOthers = new Set<string>();
  /**
   * Revision of the node's DEL fence (del-fence-record.ts) as last seen: every ADD txn compares
   * it. 0 (absent) until a compare that failed on it returns the current one.
   */
  delFenceRev = 0;

  constructor(readonly node: string) {
    this.blocks = new OwnBlocks(node);
  }

  /** Records a block entry as seen (keeps it only while it is affine to this node). */
  noteBlock(key: string, rev: number, block: Block | null): void {
    this.claimedByOthers.delete(key);
    if (block !== null && block.affinity === this.node) {
      this.blocks.set(key, { rev, block });
      return;
    }
    this.blocks.delete(key);
    if (block === null) return;
    this.claimedByOthers.add(key);
    if (this.claimedByOthers.size > MAX_CLAIMED_HINTS) this.claimedByOthers.delete(this.claimedByOthers.values().next().value as string);
  }

  noteHandle(handle: string, rev: number, record: HandleRecord | undefined): void {
    this.handles.delete(handle);
    if (record === undefined) return;
    this.handles.set(handle, { rev, record });
    if (this.handles.size > MAX_HANDLE_HINTS) this.handles.delete(this.handles.keys().next().value as string);
  }

  /** Records the node entry (labels), tolerating a record without labels. */
  noteNode(entry: Entry | undefined): void {
    let labels: Record<string, string> = {};
    if (entry) {
      try {
        const o = JSON.parse(entry.value) as { labels?: unknown };
        if (o.labels && typeof o.labels === 'object') {
          labels = Object.fromEntries(Object.entries(o.labels).filter((kv): kv is [string, string] => typeof kv[1] === 'string'));
        }
      } catch {
        /* a corrupt node record selects like a node without labels; ipam check reports it */
      }
    }
    this.labels = { rev: entry?.rev ?? 0, labels };
  }
}

/**
 * Fills the node's blocks from the datastore: one list of `affinities/<node>/` and one batched
 * read of the blocks it names (2 round trips). Blocks whose affinity is not this node (a stale
 * affinity record) are left out; `ipam check` reports them.
 */
export async function loadNodeBlocks(store: Store, view: NodeView): Promise<void> {
  const affinities = await store.list(affinityPrefix(view.node));
  const keys = affinities.flatMap((e) => {
    const a = parseAffinityKey(e.key);
    return a ? [blockKey(a.cidr)] : [];
  });
  view.blocks.clear();
  if (keys.length > 0) {
    for (const [key, entry] of await readKeys(store, keys)) {
      if (entry) view.noteBlock(key, entry.rev, decodeBlock(entry));
    }
  }
  view.blocksLoaded = true;
}

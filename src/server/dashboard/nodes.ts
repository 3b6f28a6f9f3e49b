/**
 * The node table (GET /api/v1/nodes): pod CIDRs, blocks, addresses, and how many of those are
 * in use by pods vs idle in the node agent's warm pool (a stacked bar and both counts).
 */
import { api } from './api.js';
import { highlight } from './block-map.js';
import { byId, el } from './dom.js';
import { fmt, pct } from './format.js';
import { state } from './state.js';
import type { NodeRow, NodesPage } from './types.js';

const COLUMNS = 6;

export async function refreshNodes(): Promise<void> {
  const q = `?limit=${state.nodeLimit}${state.nodeFilter ? `&q=${encodeURIComponent(state.nodeFilter)}` : ''}`;
  renderNodes(await api<NodesPage>('GET', `/nodes${q}`));
}

function renderNodes(r: NodesPage): void {
  const body = byId('nodes');
  body.textContent = '';
  byId('nodes-count').textContent = `(${fmt(r.total)})`;
  if (r.items.length === 0)
    body.appendChild(el('tr', {}, [el('td', { colspan: String(COLUMNS), class: 'muted', text: state.nodeFilter ? 'No node matches.' : 'No nodes yet.' })]));
  for (const n of r.items) body.appendChild(nodeRow(n));
  byId('nodes-more').hidden = r.next === undefined;
}

function nodeRow(n: NodeRow): HTMLElement {
  return el(
    'tr',
    {
      class: `clickable${state.highlightNode === n.name ? ' selected' : ''}`,
      'data-node': n.name,
      'data-allocated': String(n.allocated),
      'data-in-use': String(n.inUse),
      'data-idle': String(n.idle),
      title: "highlight this node's blocks",
      onclick: () => {
        state.highlightNode = state.highlightNode === n.name ? null : n.name;
        highlight();
      },
    },
    [
      el('td', {}, [el('b', { text: n.name }), recordBadge(n), n.deleting ? el('span', { class: 'badge off', text: 'deleting' }) : null]),
      el('td', { class: 'mono', text: n.podCIDRs.length ? n.podCIDRs.join(', ') : '—' }),
      el('td', { class: 'num', text: fmt(n.blocks) }),
      el('td', { class: 'num', text: fmt(n.allocated) }),
      useCell(n),
      headroomCell(n),
    ],
  );
}

/**
 * A node known from its blocks only: deleted (its record was, which proves it gone: cluster GC
 * frees its pods' addresses and blocks after its grace period) or unregistered (it never had a
 * record: it claimed blocks and may well run, so GC leaves them alone).
 */
function recordBadge(n: NodeRow): HTMLElement | null {
  if (n.registered) return null;
  if (n.deletedAt) {
    return el('span', {
      class: 'badge off',
      'data-badge': 'deleted',
      title: `record deleted ${new Date(n.deletedAt).toLocaleString()}: cluster GC frees its pods' addresses and blocks after its grace period`,
      text: 'deleted',
    });
  }
  return el('span', {
    class: 'badge off',
    'data-badge': 'unregistered',
    title: `no node record, and none was deleted: cluster GC leaves its blocks alone. Register it (podipam node add ${n.name}); if it is gone, podipam node delete ${n.name} --gone`,
    text: 'unregistered',
  });
}

/** In use vs idle: a bar split in proportion, then both counts. */
function useCell(n: NodeRow): HTMLElement {
  const total = n.inUse + n.idle;
  return el('td', { class: 'use', title: `${n.inUse} in use by pods, ${n.idle} idle in the warm pool` }, [
    el('div', { class: 'ubar' }, [
      el('span', { class: 'u-in', style: `width:${pct(n.inUse, total).toFixed(2)}%` }),
      el('span', { class: 'u-idle', style: `width:${pct(n.idle, total).toFixed(2)}%` }),
    ]),
    el('div', { class: 'nums' }, [el('b', { class: 'in-use', text: fmt(n.inUse) }), ' in use · ', el('b', { class: 'idle', text: fmt(n.idle) }), ' idle']),
  ]);
}

/** Headroom per family: "v4 12 · v6 300"; a family at 0 marked (its agent taints the node). */
function headroomCell(n: NodeRow): HTMLElement {
  const rows = n.headroom ?? [];
  const title = rows
    .map((h) => `IPv${h.family}: ${h.free} free in its blocks, ${h.idle} idle, ${h.claimable} in ${h.claimableBlocks} blocks it may still claim`)
    .join('\n');
  return el(
    'td',
    { class: 'num', 'data-headroom': rows.map((h) => `${h.family}:${h.headroom}`).join(','), title: title || 'no pool selects this node' },
    rows.length === 0
      ? ['—']
      : rows.flatMap((h, i) => [
          i > 0 ? ' · ' : '',
          el(h.headroom === 0 ? 'b' : 'span', { class: h.headroom === 0 ? 'badge off' : '', text: `v${h.family} ${fmt(h.headroom)}` }),
        ]),
  );
}

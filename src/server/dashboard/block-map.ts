/** The block map of the selected pool (GET /api/v1/pools/:name/blocks) and one block's addresses (GET /api/v1/blocks/:cidr). */
import { api, statusOf } from './api.js';
import { byId, el, mutedNote } from './dom.js';
import { fillColor, fmt, pct } from './format.js';
import { state } from './state.js';
import { findHistory } from './search.js';
import type { BlockDetail, BlockMap } from './types.js';

export async function refreshMap(): Promise<void> {
  const pool = state.pool;
  if (!pool) {
    byId('block-map').textContent = '';
    byId('map-pool').textContent = '';
    return;
  }
  const m = await api<BlockMap>('GET', `/pools/${encodeURIComponent(pool)}/blocks`);
  if (pool === state.pool) await renderMap(m);
}

async function renderMap(m: BlockMap): Promise<void> {
  byId('map-pool').textContent = `— ${m.pool} (${m.cidr})`;
  const frag = document.createDocumentFragment();
  let claimed = 0;
  for (const c of m.cells) {
    if (typeof c === 'number') {
      for (let i = 0; i < c; i++) frag.appendChild(el('div', { class: 'cell free' }));
      continue;
    }
    const [cidr, nodeIndex, allocated] = c;
    claimed++;
    const node = nodeIndex >= 0 ? (m.nodes[nodeIndex] ?? '') : '';
    const f = m.blockCapacity > 0 ? allocated / m.blockCapacity : 0;
    frag.appendChild(
      el('div', {
        class: `cell${cidr === state.block ? ' selected' : ''}${state.highlightNode && node === state.highlightNode ? ' hl' : ''}`,
        style: `background:${fillColor(f)}`,
        'data-block': cidr,
        'data-node': node,
        'data-allocated': String(allocated),
        role: 'gridcell',
      }),
    );
  }
  byId('block-map').replaceChildren(frag);
  let note = `${claimed} claimed block${claimed === 1 ? '' : 's'}`;
  note += m.slots === null ? ' (the pool has too many block slots to draw the unclaimed ones)' : ` of ${fmt(m.slots)} block slots`;
  byId('map-note').textContent = note;
  if (state.block) await refreshBlock();
}

function cellOf(target: EventTarget | null): HTMLElement | null {
  return target instanceof HTMLElement && target.classList.contains('cell') && !target.classList.contains('free') ? target : null;
}

function mapCapacity(): string {
  const p = state.overview?.pools.find((x) => x.name === state.pool);
  return p ? String(p.blockCapacity) : '?';
}

export function initMapEvents(): void {
  const box = byId('block-map');
  const tip = byId('tooltip');
  box.addEventListener('mousemove', (ev) => {
    const c = cellOf(ev.target);
    if (!c) {
      tip.hidden = true;
      return;
    }
    tip.replaceChildren(
      el('div', { class: 'mono', text: c.getAttribute('data-block') ?? '' }),
      el('div', { text: `${c.getAttribute('data-node') || 'no affinity'} · ${c.getAttribute('data-allocated') ?? ''} / ${mapCapacity()} used` }),
    );
    tip.hidden = false;
    tip.style.left = `${ev.clientX + 14}px`;
    tip.style.top = `${ev.clientY + 14}px`;
  });
  box.addEventListener('mouseleave', () => {
    tip.hidden = true;
  });
  box.addEventListener('click', (ev) => {
    const c = cellOf(ev.target);
    if (!c) return;
    state.block = c.getAttribute('data-block');
    for (const x of box.querySelectorAll('.cell.selected')) x.classList.remove('selected');
    c.classList.add('selected');
    void refreshBlock();
  });
}

/** Outlines the highlighted node's blocks. */
export function highlight(): void {
  for (const c of document.querySelectorAll('#block-map .cell')) {
    c.classList.toggle('hl', state.highlightNode !== null && c.getAttribute('data-node') === state.highlightNode);
  }
}

async function refreshBlock(): Promise<void> {
  const cidr = state.block;
  if (!cidr) return;
  try {
    const b = await api<BlockDetail>('GET', `/blocks/${encodeURIComponent(cidr)}`);
    if (cidr === state.block) renderBlock(b);
  } catch (e) {
    if (statusOf(e) !== 404) throw e;
    state.block = null;
    mutedNote(byId('block-detail'), 'That block was released.');
  }
}

function renderBlock(b: BlockDetail): void {
  const box = byId('block-detail');
  box.textContent = '';
  box.setAttribute('data-block', b.cidr);
  box.appendChild(el('h3', { text: b.cidr }));
  box.appendChild(
    el('div', { class: 'muted small' }, [
      'node ',
      el('b', { text: b.node || 'none' }),
      ' · ',
      el('span', { class: 'block-allocated', 'data-value': String(b.allocated), text: String(b.allocated) }),
      ` of ${b.capacity} used`,
    ]),
  );
  box.appendChild(el('div', { class: 'bar' }, [el('span', { style: `width:${pct(b.allocated, b.capacity).toFixed(1)}%` })]));
  if (b.allocations.length === 0) {
    box.appendChild(el('p', { class: 'muted', text: 'No addresses allocated.' }));
    return;
  }
  // Each address links to its history (the search panel's timeline).
  const link = (ip: string): HTMLElement =>
    el('a', {
      href: '#search-result',
      class: 'history-link',
      title: `history of ${ip}`,
      text: ip,
      onclick: (ev) => {
        ev.preventDefault();
        findHistory(ip);
      },
    });
  const rows = b.allocations.map((a) =>
    el('tr', { 'data-ip': a.ip }, [
      el('td', { class: 'mono' }, [link(a.ip)]),
      el('td', { class: 'small', text: a.pod ?? '' }),
      el('td', { class: 'mono small', text: a.handle ?? '' }),
    ]),
  );
  box.appendChild(
    el('table', { class: 'grid' }, [
      el('thead', {}, [el('tr', {}, [el('th', { text: 'Address' }), el('th', { text: 'Pod' }), el('th', { text: 'Handle' })])]),
      el('tbody', {}, rows),
    ]),
  );
}

/** The totals and the pool cards (GET /api/v1/overview). */
import { poolActions } from './pool-actions.js';
import { refreshMap } from './block-map.js';
import { byId, el, mutedNote } from './dom.js';
import { fmt, pct, pctText } from './format.js';
import { state } from './state.js';
import type { Overview, PoolRow } from './types.js';

export function setStat(name: string, text: string, value: string): void {
  const e = document.querySelector(`[data-stat="${name}"]`);
  if (!e) throw new Error(`the page has no [data-stat="${name}"]`);
  e.textContent = text;
  e.setAttribute('data-value', value);
}

export function renderOverview(o: Overview): void {
  state.overview = o;
  const t = o.totals;
  for (const k of ['pools', 'nodes', 'blocks', 'allocated'] as const) setStat(k, fmt(t[k]), String(t[k]));
  byId('datastore').textContent = o.datastore ?? '';
  const box = byId('pools');
  box.textContent = '';
  if (o.pools.length === 0)
    box.appendChild(el('p', { class: 'muted', text: 'No pools yet. Create one with "podipam pool create NAME --cidr CIDR" or POST /api/v1/pools.' }));
  if (!state.pool || !o.pools.some((p) => p.name === state.pool)) {
    state.pool = o.pools[0]?.name ?? null;
    state.block = null;
  }
  for (const p of o.pools) box.appendChild(poolCard(p));
}

function poolCard(p: PoolRow): HTMLElement {
  const u = pct(p.allocated, p.capacity);
  const inBlocks = p.blocks * p.blockCapacity;
  const bar = el('div', { class: `bar${u >= 90 ? ' hot' : u >= 70 ? ' warn' : ''}` }, [el('span', { style: `width:${Math.min(100, u).toFixed(2)}%` })]);
  return el(
    'div',
    {
      class: `pool${p.name === state.pool ? ' selected' : ''}`,
      'data-pool': p.name,
      'data-allocated': String(p.allocated),
      'data-capacity': String(p.capacity),
      'data-blocks': String(p.blocks),
      role: 'button',
      tabindex: '0',
      onclick: () => selectPool(p.name),
    },
    [
      el('div', { class: 'row' }, [
        el('div', {}, [
          el('span', { class: 'name', text: p.name }),
          el('span', { class: `badge${p.family === 6 ? ' v6' : ''}`, text: `IPv${p.family}` }),
          p.disabled ? el('span', { class: 'badge off', text: 'disabled' }) : null,
          p.draining ? el('span', { class: 'badge off', text: 'draining' }) : null,
        ]),
        el('div', { class: 'pct', text: pctText(u) }),
      ]),
      el('div', {
        class: 'cidr',
        text: `${p.cidr}  ·  /${p.blockSize} blocks of ${fmt(p.blockCapacity)}${(p.formerBlockSizes ?? []).length > 0 ? `  ·  older /${(p.formerBlockSizes ?? []).join(', /')}` : ''}`,
      }),
      bar,
      el('div', { class: 'row nums' }, [el('span', {}, [el('b', { class: 'allocated', text: fmt(p.allocated) }), ` of ${fmt(p.capacity)} addresses`])]),
      el('div', { class: 'row nums' }, [
        el('span', {}, [el('b', { text: fmt(p.blocks) }), ` blocks claimed${p.blockSlots !== null ? ` of ${fmt(p.blockSlots)}` : ''}`]),
        el('span', { text: inBlocks > 0 ? `blocks ${pctText(pct(p.allocated, inBlocks))} full` : '' }),
      ]),
      poolActions(p),
    ],
  );
}

function selectPool(name: string): void {
  if (state.pool === name) return;
  state.pool = name;
  state.block = null;
  for (const c of document.querySelectorAll('.pool')) c.classList.toggle('selected', c.getAttribute('data-pool') === name);
  mutedNote(byId('block-detail'), 'Click a block to see its addresses.');
  void refreshMap();
}

/**
 * The pool card's changes (admin token): drain / undrain with what the pool still holds, and a
 * resize to a new CIDR. The server validates; its message is shown as it answers. The next
 * overview refresh shows the new state.
 */
import { api, messageOf } from './api.js';
import { el } from './dom.js';
import type { PoolRow } from './types.js';

interface Held {
  readonly allocated: number;
  readonly nodes: readonly { readonly node: string; readonly pods: readonly unknown[]; readonly warm?: { readonly idle: readonly string[] } }[];
}

export function poolActions(p: PoolRow): HTMLElement {
  const note = el('span', { class: 'muted small', 'data-role': 'pool-note' });
  const say = (text: string): void => {
    note.textContent = text;
  };
  const heldText = (h: Held): string =>
    `${h.allocated} address${h.allocated === 1 ? '' : 'es'} still held${h.nodes.length > 0 ? ` on ${h.nodes.map((n) => `${n.node} (${n.pods.length} pod${n.pods.length === 1 ? '' : 's'}${n.warm ? `, ${n.warm.idle.length} idle in its warm pool` : ''})`).join(', ')}` : ''}`;
  const run = (ev: MouseEvent, fn: () => Promise<string>): void => {
    ev.stopPropagation();
    const b = ev.currentTarget as HTMLButtonElement;
    b.disabled = true;
    fn()
      .then(say)
      .catch((e: unknown) => say(messageOf(e)))
      .finally(() => (b.disabled = false));
  };
  const base = `/pools/${encodeURIComponent(p.name)}`;
  const cidr = el('input', { type: 'text', value: p.cidr, 'aria-label': `new CIDR of pool ${p.name}`, size: '18' });
  cidr.addEventListener('click', (ev) => ev.stopPropagation());
  const draining = p.draining === true;
  return el('div', { class: 'row pool-actions' }, [
    el('button', {
      type: 'button',
      text: draining ? 'Undrain' : 'Drain',
      onclick: (ev) => run(ev, async () => heldText(await api<Held>('POST', `${base}/${draining ? 'undrain' : 'drain'}`, {}))),
    }),
    draining ? el('button', { type: 'button', text: 'Held?', onclick: (ev) => run(ev, async () => heldText(await api<Held>('GET', `${base}/held`))) }) : null,
    cidr,
    el('button', {
      type: 'button',
      text: 'Resize',
      onclick: (ev) =>
        run(ev, async () => {
          const r = await api<{ cidr: string; resized: string; removedBlocks: number }>('POST', `${base}/resize`, { cidr: cidr.value.trim() });
          return `${r.resized === 'same' ? 'unchanged' : r.resized === 'grow' ? 'grown' : 'shrunk'}: ${r.cidr}${r.removedBlocks > 0 ? `, ${r.removedBlocks} empty blocks removed` : ''}`;
        }),
    }),
    note,
  ]);
}

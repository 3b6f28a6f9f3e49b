/**
 * Find a pod or an address: `NS/NAME` (GET /api/v1/pods/NS/NAME), a bare pod name in any
 * namespace (GET /api/v1/pods?name=NAME) or an IPv4/IPv6 address (GET /api/v1/addresses/IP);
 * shows each holder: pod, handle, addresses, node, block. For an address or `NS/NAME`, the
 * history's timeline of holders follows (history.ts); `findHistory` runs a search from a link
 * (a block's address list).
 */
import { api, messageOf, statusOf } from './api.js';
import { byId, el, mutedNote } from './dom.js';
import { showHistory } from './history.js';
import type { PodHandleRow } from './types.js';

const IP = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:.]*)$/;

export function initSearch(): void {
  byId<HTMLFormElement>('search-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void search(byId<HTMLInputElement>('search-input').value.trim());
  });
}

/** Searches `q` as if typed, and brings the result into view. */
export function findHistory(q: string): void {
  byId<HTMLInputElement>('search-input').value = q;
  byId('search-result').scrollIntoView({ block: 'start' });
  void search(q);
}

async function search(q: string): Promise<void> {
  const box = byId('search-result');
  const past = byId('history-result');
  box.removeAttribute('data-found');
  past.replaceChildren();
  if (q === '') return mutedNote(box, 'Give a pod (namespace/name or name) or an address.');
  const history = IP.test(q) ? showHistory(past, { address: q }) : q.includes('/') ? showHistory(past, { pod: q }) : Promise.resolve();
  try {
    let rows: readonly PodHandleRow[];
    if (IP.test(q)) rows = [await api<PodHandleRow & { block: string }>('GET', `/addresses/${encodeURIComponent(q)}`)];
    else if (q.includes('/')) rows = (await api<{ items: PodHandleRow[] }>('GET', `/pods/${q.split('/').map(encodeURIComponent).join('/')}`)).items;
    else rows = (await api<{ items: PodHandleRow[] }>('GET', `/pods?name=${encodeURIComponent(q)}`)).items;
    render(box, q, rows);
  } catch (e) {
    mutedNote(box, statusOf(e) === 404 || statusOf(e) === 400 ? `Nothing found: ${messageOf(e)}` : messageOf(e));
  }
  await history;
}

function render(box: HTMLElement, q: string, rows: readonly PodHandleRow[]): void {
  if (rows.length === 0) return mutedNote(box, `Nothing found: no pod named ${q} holds an address.`);
  box.setAttribute('data-found', String(rows.length));
  const head = el(
    'tr',
    {},
    ['Pod', 'Handle', 'Addresses', 'Node', 'Block'].map((h) => el('th', { text: h })),
  );
  const body = rows.map((r) =>
    el('tr', { 'data-handle': r.handle, 'data-pod': r.pod ?? '' }, [
      el('td', { text: r.pod ?? '–' }),
      el('td', { class: 'mono', text: r.handle }),
      el('td', { class: 'mono', text: r.addresses.map((a) => a.ip).join(', ') }),
      el('td', { text: r.node }),
      el('td', { class: 'mono', text: [...new Set(r.addresses.map((a) => a.block))].join(', ') }),
    ]),
  );
  box.replaceChildren(el('table', { class: 'grid' }, [el('thead', {}, [head]), el('tbody', {}, body)]));
}

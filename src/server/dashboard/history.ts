/**
 * The allocation history of an address or a pod (GET /api/v1/history?address=IP | ?pod=NS/NAME):
 * a timeline of holders, oldest first — a bar per hold on one time axis, from → until (or "still
 * held"), the pod and why it was released. A time known only within bounds shows as "between A
 * and B" (and its end of the bar fades over that interval); gaps of the history are drawn and
 * listed: who held the address inside one is unknown.
 */
import { api, messageOf, statusOf } from './api.js';
import { el, mutedNote } from './dom.js';

/** A time as the API gives it (src/history/format-history.ts). */
type TimeJson = { readonly exact: true; readonly at: string } | { readonly exact: false; readonly earliest: string; readonly at: string };

export interface HoldJson {
  readonly address: string;
  readonly handle: string;
  readonly pod?: { readonly namespace: string; readonly name: string; readonly uid?: string };
  readonly containerId?: string;
  readonly ifname?: string;
  readonly network?: string;
  readonly node?: string;
  readonly pool?: string;
  readonly from: TimeJson;
  readonly until: TimeJson | null;
  readonly why: string | null;
}

export interface GapJson {
  readonly from: string;
  readonly until: string;
  readonly cause: string;
}

interface HistoryAnswer {
  readonly items: readonly HoldJson[];
  readonly gaps: readonly GapJson[];
}

/** "2026-03-01 12:00:00Z" from RFC 3339 (seconds are enough on a page; the API keeps milliseconds). */
function short(t: string): string {
  return t.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function timeText(t: TimeJson): string {
  return t.exact ? short(t.at) : `between ${short(t.earliest)} and ${short(t.at)}`;
}

/** Fills `box` with the history of an address (`{address}`) or a pod (`{pod: "NS/NAME"}`). */
export async function showHistory(box: HTMLElement, what: { readonly address: string } | { readonly pod: string }): Promise<void> {
  box.removeAttribute('data-holds');
  const query = 'address' in what ? `address=${encodeURIComponent(what.address)}` : `pod=${encodeURIComponent(what.pod)}`;
  const subject = 'address' in what ? what.address : `pod ${what.pod}`;
  let h: HistoryAnswer;
  try {
    h = await api<HistoryAnswer>('GET', `/history?${query}`);
  } catch (e) {
    if (statusOf(e) === 503) return mutedNote(box, `No history: ${messageOf(e)}.`);
    return mutedNote(box, `History of ${subject}: ${messageOf(e)}`);
  }
  renderTimeline(box, subject, 'pod' in what, h);
}

function ms(t: string): number {
  return Date.parse(t);
}

function renderTimeline(box: HTMLElement, subject: string, byPod: boolean, h: HistoryAnswer): void {
  box.setAttribute('data-holds', String(h.items.length));
  box.setAttribute('data-gaps', String(h.gaps.length));
  const title = el('h3', { text: `History of ${subject}` });
  if (h.items.length === 0 && h.gaps.length === 0) {
    box.replaceChildren(title, el('p', { class: 'muted', text: `No holder of ${subject} in the history.` }));
    return;
  }
  const now = Date.now();
  // The axis spans the known instants (a hold's `at`, a gap's end): an interval reaching further
  // back (the history's first gap starts at 0, "before history began") is cut at the left edge.
  const known = [...h.items.map((x) => ms(x.from.at)), ...h.gaps.map((g) => ms(g.until))];
  const ends = [...h.items.map((x) => (x.until ? ms(x.until.at) : now)), ...h.gaps.map((g) => ms(g.until))];
  const first = Math.min(...known);
  const hi = Math.max(...ends, first + 1);
  const lo = Math.max(0, first - (hi - first) * 0.05);
  const pos = (t: number): number => (100 * (Math.max(lo, t) - lo)) / (hi - lo);
  const span = (a: number, b: number): string => `left:${pos(a).toFixed(2)}%;width:${Math.max(0.4, pos(b) - pos(a)).toFixed(2)}%`;

  // One time order for holds and gaps: a gap sits where it happened.
  type Row = { readonly t: number; readonly gap: boolean; readonly node: HTMLElement };
  const rows: Row[] = [];
  for (const x of h.items) {
    const a = ms(x.from.exact ? x.from.at : x.from.earliest);
    const b = x.until ? ms(x.until.at) : now;
    const bar = el('span', {
      class: `tl-bar${x.from.exact ? '' : ' fuzzy-start'}${x.until === null ? ' open' : x.until.exact ? '' : ' fuzzy-end'}`,
      style: span(a, b),
    });
    const pod = x.pod ? `${x.pod.namespace}/${x.pod.name}` : `handle ${x.handle}`;
    const until = x.until ? timeText(x.until) : 'still held';
    rows.push({
      t: a,
      gap: false,
      node: el(
        'div',
        {
          class: 'tl-row hold',
          'data-address': x.address,
          'data-pod': x.pod ? `${x.pod.namespace}/${x.pod.name}` : '',
          'data-why': x.why ?? '',
          'data-open': String(x.until === null),
        },
        [
          el('div', { class: 'tl-track' }, [bar]),
          el('div', { class: 'tl-text' }, [
            el('span', { class: 'mono tl-when', text: `${timeText(x.from)} → ${until}` }),
            ' ',
            el('b', { text: byPod ? x.address : pod }),
            byPod ? ` ${x.node ? `on ${x.node}` : ''}` : x.node ? ` on ${x.node}` : '',
            x.pod?.uid ? el('span', { class: 'muted small', text: ` uid ${x.pod.uid}` }) : null,
            x.why ? el('span', { class: 'badge why', text: x.why }) : el('span', { class: 'badge held', text: 'held' }),
          ]),
        ],
      ),
    });
  }
  for (const g of h.gaps) {
    rows.push({
      t: ms(g.from),
      gap: true,
      node: el('div', { class: 'tl-row gap', 'data-gap-from': g.from, 'data-gap-until': g.until }, [
        el('div', { class: 'tl-track' }, [el('span', { class: 'tl-bar gap', style: span(ms(g.from), ms(g.until)) })]),
        el('div', { class: 'tl-text' }, [
          el('span', { class: 'mono tl-when', text: `${short(g.from)} → ${short(g.until)}` }),
          ' ',
          el('b', { text: 'gap: unknown' }),
          el('span', { class: 'muted small', text: ` — ${g.cause}` }),
        ]),
      ]),
    });
  }
  // At one time, the gap first: a hold that began somewhere inside it follows it.
  rows.sort((p, q) => p.t - q.t || Number(q.gap) - Number(p.gap));
  const axis = el('div', { class: 'tl-axis muted small' }, [
    el('span', { text: short(new Date(lo).toISOString()) }),
    el('span', { text: short(new Date(hi).toISOString()) }),
  ]);
  box.replaceChildren(title, el('div', { class: 'timeline' }, [...rows.map((r) => r.node), axis]));
}

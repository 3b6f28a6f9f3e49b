/**
 * Usage over time and forecast (GET /api/v1/pools/NAME/forecast): per pool, the addresses pods
 * held over the window as the allocation history recorded them, the fitted trend drawn ahead
 * of now (dashed) up to the pool's capacity, and when it is full; and the nodes' headroom
 * (GET /api/v1/nodes) as bars, a node at 0 in red. Drawn in SVG, no library.
 */
import { api, statusOf } from './api.js';
import { byId, el, mutedNote } from './dom.js';
import { fmt } from './format.js';
import { formatSpan } from '../../util/format-span.js';
import { state } from './state.js';
import type { NodesPage, PoolForecast } from './types.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 560;
const H = 170;
const PAD = { l: 44, r: 12, t: 12, b: 22 };

function svg(tag: string, attrs: Readonly<Record<string, string | number>>, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export async function refreshForecasts(): Promise<void> {
  const pools = state.overview?.pools ?? [];
  const box = byId('forecasts');
  let got: PoolForecast[];
  try {
    got = await Promise.all(pools.map((p) => api<PoolForecast>('GET', `/pools/${encodeURIComponent(p.name)}/forecast`)));
  } catch (e) {
    if (statusOf(e) === 503) return mutedNote(box, 'History is off (serve runs without --history-db): no usage over time, no forecast.');
    throw e;
  }
  box.replaceChildren(...got.map(chart));
  if (got.length === 0) mutedNote(box, 'No pools yet.');
  const first = got[0];
  byId('forecast-method').textContent = first ? `Trend: ${first.method.text}.` : '';
  renderHeadroom(await api<NodesPage>('GET', '/nodes?limit=50'));
}

/** "full in 1h30m (14:05)", "not filling", "full", "no trend yet". */
function verdict(f: PoolForecast): string {
  const t = f.trend;
  if (t.state === 'filling') return `full in ${formatSpan((t.secondsToFull ?? 0) * 1000)} (${new Date(t.fullAt ?? 0).toLocaleString()})`;
  return t.state === 'not-filling' ? 'not filling' : t.state === 'full' ? 'full' : 'no trend yet';
}

function chart(f: PoolForecast): HTMLElement {
  const pts = f.series.map((s) => ({ t: Date.parse(s.at), v: s.used }));
  const t0 = pts[0]?.t ?? Date.now();
  const now = Date.parse(f.method.until);
  const cap = Number(f.capacity);
  const rate = f.trend.ratePerHour / 3_600_000;
  // Ahead of now: as far as the window reaches back, or up to the instant the pool is full if sooner.
  const span = Math.max(now - t0, 60_000);
  const full = f.trend.fullAt !== null ? Date.parse(f.trend.fullAt) : Infinity;
  const end = f.trend.state === 'filling' ? Math.min(now + span, full) : now + span / 2;
  const endV = f.trend.state === 'filling' ? Math.min(cap, f.allocated + rate * (end - now)) : f.allocated;
  const maxV = Math.max(1, f.allocated, endV, ...pts.map((p) => p.v));
  const top = cap <= maxV * 1.5 ? cap : maxV * 1.25;
  const x = (t: number): number => PAD.l + ((t - t0) / (end - t0 || 1)) * (W - PAD.l - PAD.r);
  const y = (v: number): number => H - PAD.b - (Math.min(v, top) / (top || 1)) * (H - PAD.t - PAD.b);
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': `usage of pool ${f.pool} over time` });
  g.append(svg('line', { class: 'axis', x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b }));
  g.append(svg('text', { class: 'tick', x: PAD.l - 4, y: y(top) + 4, 'text-anchor': 'end' }, fmt(Math.round(top))));
  g.append(svg('text', { class: 'tick', x: PAD.l - 4, y: H - PAD.b + 4, 'text-anchor': 'end' }, '0'));
  g.append(svg('text', { class: 'tick', x: PAD.l, y: H - 6 }, `-${formatSpan(now - t0)}`));
  g.append(svg('text', { class: 'tick', x: x(now), y: H - 6, 'text-anchor': 'middle' }, 'now'));
  if (cap <= top) g.append(svg('line', { class: 'capacity', x1: PAD.l, y1: y(cap), x2: W - PAD.r, y2: y(cap) }));
  g.append(svg('line', { class: 'now', x1: x(now), y1: PAD.t, x2: x(now), y2: H - PAD.b }));
  g.append(svg('polyline', { class: 'usage', points: pts.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ') }));
  if (f.trend.state !== 'unknown') {
    g.append(svg('line', { class: `forecast ${f.trend.state}`, 'data-state': f.trend.state, x1: x(now), y1: y(f.allocated), x2: x(end), y2: y(endV) }));
    if (f.trend.state === 'filling' && full <= end) g.append(svg('circle', { class: 'full-at', cx: x(full), cy: y(cap), r: 4 }));
  }
  const rateText = `${f.trend.ratePerHour > 0 ? '+' : ''}${Number(f.trend.ratePerHour.toFixed(1))}/h`;
  return el(
    'div',
    {
      class: 'forecast-card',
      'data-pool': f.pool,
      'data-state': f.trend.state,
      'data-rate': String(f.trend.ratePerHour),
      'data-seconds-to-full': String(f.trend.secondsToFull ?? ''),
    },
    [
      el('div', { class: 'row' }, [
        el('b', { text: f.pool }),
        el('span', {
          class: `verdict ${f.trend.state}`,
          text: `${fmt(f.allocated)} of ${fmt(f.capacity)} · ${f.trend.state === 'unknown' ? '' : `${rateText} · `}${verdict(f)}`,
        }),
      ]),
      g as unknown as HTMLElement,
    ],
  );
}

/** One bar per node and family: what it can still hand out, relative to the node with most. */
function renderHeadroom(r: NodesPage): void {
  const box = byId('headroom');
  const rows = r.items.flatMap((n) => (n.headroom ?? []).map((h) => ({ node: n.name, ...h })));
  if (rows.length === 0) return mutedNote(box, 'No node has a pool yet.');
  const max = Math.max(1, ...rows.map((h) => h.headroom));
  box.replaceChildren(
    ...rows.map((h) =>
      el(
        'div',
        {
          class: `hbar${h.headroom === 0 ? ' empty' : ''}`,
          'data-node': h.node,
          'data-family': String(h.family),
          'data-headroom': String(h.headroom),
          title: `${h.free} free in its blocks, ${h.idle} idle, ${h.claimable} in ${h.claimableBlocks} blocks it may still claim`,
        },
        [
          el('span', { class: 'hname', text: `${h.node} · v${h.family}` }),
          el('span', { class: 'htrack' }, [el('span', { class: 'hfill', style: `width:${((100 * h.headroom) / max).toFixed(2)}%` })]),
          el('span', { class: 'hnum', text: fmt(h.headroom) }),
        ],
      ),
    ),
  );
}

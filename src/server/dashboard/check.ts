/** The leaks and problems panel (GET /api/v1/check), with a Release button for the admin (POST /api/v1/release). */
import { api, messageOf } from './api.js';
import { byId, el } from './dom.js';
import { setStat } from './overview.js';
import { state } from './state.js';
import type { CheckReport, Finding } from './types.js';

/** Most findings of each kind drawn. */
const SHOWN = 200;

let afterRelease: () => Promise<unknown> = () => Promise.resolve();
let showError: (msg: string | null) => void = () => undefined;

/** What the panel calls after a release (a refresh) and to report a failure. */
export function initCheck(o: { readonly afterRelease: () => Promise<unknown>; readonly showError: (msg: string | null) => void }): void {
  afterRelease = o.afterRelease;
  showError = o.showError;
}

export async function refreshCheck(fresh = false): Promise<void> {
  state.lastCheck = Date.now();
  renderCheck(await api<CheckReport>('GET', `/check${fresh ? '?maxAge=0' : ''}`));
}

function describe(x: Finding): string {
  const parts: string[] = [];
  for (const k of ['ip', 'handle', 'block', 'node', 'pool'] as const) {
    const v = x[k];
    if (v) parts.push(`${k} ${v}`);
  }
  return parts.join(' · ');
}

function renderCheck(c: CheckReport): void {
  const box = byId('check');
  box.textContent = '';
  const n = c.leaks.length + c.problems.length;
  setStat('issues', `${c.leaks.length} / ${c.problems.length}`, String(n));
  byId('check-time').textContent = `checked ${new Date(c.checkedAt).toLocaleTimeString()}`;
  if (n === 0) {
    box.appendChild(el('div', { class: 'allgood', text: 'No leaks, no problems.' }));
    return;
  }
  const admin = state.role === 'admin';
  for (const x of c.leaks.slice(0, SHOWN)) box.appendChild(item('leak', x, admin));
  for (const x of c.problems.slice(0, SHOWN)) box.appendChild(item('problem', x, admin));
  if (n > 2 * SHOWN) box.appendChild(el('p', { class: 'muted small', text: `${n - 2 * SHOWN} more not shown; use "podipam ipam check --json".` }));
  if (!admin) box.appendChild(el('p', { class: 'muted small', text: 'Releasing needs the admin token.' }));
}

function item(kind: 'leak' | 'problem', x: Finding, admin: boolean): HTMLElement {
  const canRelease = admin && Boolean(x.ip || x.handle);
  let title: HTMLElement;
  let detail: string;
  if (kind === 'leak') {
    title = el('div', { class: 'mono strong', text: x.ip ?? '' });
    detail = `held by handle ${x.handle ?? '?'}, whose record is gone · block ${x.block ?? '?'}`;
  } else {
    title = el('div', { text: x.message || describe(x) });
    detail = x.key || describe(x);
  }
  const label = kind === 'leak' ? 'leaked address' : (x.kind || 'problem').replace(/-/g, ' ');
  return el('div', { class: 'issue', 'data-kind': kind }, [
    el('div', {}, [el('div', { class: `kind ${kind}`, text: label }), title, el('div', { class: 'muted small mono', text: detail })]),
    canRelease ? el('button', { class: 'danger', type: 'button', text: 'Release', onclick: (ev) => release(ev.currentTarget as HTMLButtonElement, x) }) : null,
  ]);
}

function release(button: HTMLButtonElement, x: Finding): void {
  // A leak is released only while the (missing) handle still holds the address: check's
  // answer may be stale, and the address meanwhile another pod's.
  const what = x.ip ? { ip: x.ip, ...(x.handle ? { handle: x.handle } : {}) } : { handle: x.handle };
  if (!confirm(`Release ${x.ip || x.handle || '?'}?`)) return;
  button.disabled = true;
  api('POST', '/release', what)
    .then(() => Promise.all([refreshCheck(true), afterRelease()]))
    .catch((e: unknown) => {
      showError(`release failed: ${messageOf(e)}`);
      button.disabled = false;
    });
}

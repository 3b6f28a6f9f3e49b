/**
 * The dashboard's script (bundled by scripts/bundle-dashboard.mjs into one content-hashed file,
 * served at /assets/app-HASH.js): plain browser TypeScript, no framework. It reads only
 * aggregates (overview, one pool's block map, one page of nodes, check) and polls them, so a
 * 150,000-pod store costs a few kilobytes per refresh.
 */
import { api, messageOf, statusOf } from './api.js';
import { initMapEvents, refreshMap } from './block-map.js';
import { initCheck, refreshCheck } from './check.js';
import { byId } from './dom.js';
import { renderOverview } from './overview.js';
import { initSearch } from './search.js';
import { refreshNodes } from './nodes.js';
import { refreshForecasts } from './forecast.js';
import { NODE_PAGE, saveToken, state } from './state.js';
import type { Overview, Whoami } from './types.js';

const POLL_MS = 2000;
/** check reads the whole store: ask less often than for the overview. */
const CHECK_MS = 15000;
/** A forecast's samples are minutes apart in a 6 h window: every 10 s is plenty. */
const FORECAST_MS = 10000;

function setLive(ok: boolean, text: string): void {
  byId('live').className = `live ${ok ? 'ok' : 'bad'}`;
  byId('live-text').textContent = text;
}

function showError(msg: string | null): void {
  const b = byId('error-banner');
  if (msg === null) {
    b.hidden = true;
    return;
  }
  b.textContent = msg;
  b.hidden = false;
}

async function tick(): Promise<void> {
  if (state.busy) return;
  state.busy = true;
  try {
    const overview = api<Overview>('GET', '/overview').then(async (o) => (renderOverview(o), refreshMap()));
    const jobs: Promise<void>[] = [overview, refreshNodes()];
    if (Date.now() - state.lastCheck > CHECK_MS) jobs.push(refreshCheck());
    if (Date.now() - state.lastForecast > FORECAST_MS) {
      state.lastForecast = Date.now();
      jobs.push(overview.then(refreshForecasts));
    }
    await Promise.all(jobs);
    showError(null);
    setLive(true, `live · ${new Date().toLocaleTimeString()}`);
  } catch (e) {
    if (statusOf(e) === 401) {
      byId('token-banner').hidden = false;
      setLive(false, 'token needed');
    } else {
      setLive(false, 'disconnected');
      showError(messageOf(e));
    }
  } finally {
    state.busy = false;
  }
}

async function whoami(): Promise<void> {
  const w = await api<Whoami>('GET', '/whoami');
  state.role = w.role;
  const needToken = w.authRequired && w.role === 'none';
  byId('token-banner').hidden = !needToken;
  if (needToken) setLive(false, 'token needed');
  byId('token-button').hidden = !w.authRequired && w.role === 'admin';
}

/**
 * The URL podipam serve prints carries its install token (?token=…): keep it, then drop it
 * from the address bar so it is not left in the history or shown on a shared screen.
 */
function takeUrlToken(): void {
  const m = /[?&]token=([^&#]*)/.exec(location.search);
  if (!m) return;
  saveToken(decodeURIComponent(m[1] ?? ''));
  history.replaceState(null, '', location.pathname + location.hash);
}

function start(): void {
  takeUrlToken();
  initMapEvents();
  initSearch();
  initCheck({ afterRelease: tick, showError });
  byId<HTMLFormElement>('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    saveToken(byId<HTMLInputElement>('token-input').value.trim());
    state.lastCheck = 0;
    void whoami().then(tick, tick);
  });
  byId('token-button').addEventListener('click', () => {
    const b = byId('token-banner');
    b.hidden = !b.hidden;
  });
  let debounce: ReturnType<typeof setTimeout> | undefined;
  const filter = byId<HTMLInputElement>('node-filter');
  filter.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      state.nodeFilter = filter.value.trim();
      state.nodeLimit = NODE_PAGE;
      void refreshNodes().catch((e: unknown) => showError(messageOf(e)));
    }, 200);
  });
  byId('nodes-more').addEventListener('click', () => {
    state.nodeLimit += NODE_PAGE * 4;
    void refreshNodes().catch((e: unknown) => showError(messageOf(e)));
  });
  void whoami()
    .catch(() => undefined)
    .then(tick);
  setInterval(() => {
    if (!document.hidden) void tick();
  }, POLL_MS);
}

start();

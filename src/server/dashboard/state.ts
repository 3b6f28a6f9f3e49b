/** The dashboard's state, shared by its panels. */
import type { Overview, Role } from './types.js';

export const NODE_PAGE = 50;

export interface State {
  token: string;
  role: Role;
  /** The pool whose block map is drawn. */
  pool: string | null;
  /** The block whose addresses are listed. */
  block: string | null;
  overview: Overview | null;
  nodeFilter: string;
  nodeLimit: number;
  /** The node whose blocks are outlined on the map. */
  highlightNode: string | null;
  lastCheck: number;
  /** When the forecasts were last asked for. */
  lastForecast: number;
  busy: boolean;
}

export const state: State = {
  token: localStorage.getItem('podipam.token') ?? '',
  role: 'none',
  pool: null,
  block: null,
  overview: null,
  nodeFilter: '',
  nodeLimit: NODE_PAGE,
  highlightNode: null,
  lastCheck: 0,
  lastForecast: 0,
  busy: false,
};

export function saveToken(token: string): void {
  state.token = token;
  localStorage.setItem('podipam.token', token);
}

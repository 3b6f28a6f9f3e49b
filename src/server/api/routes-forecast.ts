/**
 * `GET /api/v1/pools/NAME/forecast[?window=6h]` (read token): the pool's usage over the window
 * from the allocation history and when it is full at the fitted rate, with the method
 * (src/history/pool-forecasts.ts). 503 `history_off` when serve runs without its history.
 */
import { DEFAULT_WINDOW_MS, parseWindow, poolForecasts } from '../../history/pool-forecasts.js';
import type { ApiDeps } from './api-deps.js';
import { forecastJson } from './forecast-json.js';
import { badField, HttpError, notFound } from '../http/http-error.js';
import type { HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';
import { NAME, NAME_HINT } from '../http/validate.js';

export function addForecastRoutes(r: Router<HandlerSpec>, d: Pick<ApiDeps, 'history' | 'summary'>): void {
  r.add('GET', '/api/v1/pools/:name/forecast', {
    run: async (c) => {
      const name = c.params.name;
      if (name === undefined || !NAME.test(name)) throw badField('name', `pool name must be ${NAME_HINT}: got ${JSON.stringify(name)}`);
      for (const k of c.query.keys()) if (k !== 'window') throw badField(k, `unknown query parameter "${k}": use window`);
      const w = c.query.get('window');
      let windowMs = DEFAULT_WINDOW_MS;
      if (w !== null) {
        try {
          windowMs = parseWindow('window', w);
        } catch (e) {
          throw badField('window', `query parameter ${(e as Error).message}`);
        }
      }
      const pool = (await d.summary.get()).pools.find((p) => p.name === name);
      if (!pool) throw notFound(`pool "${name}" does not exist`);
      if (!d.history)
        throw new HttpError(
          503,
          'history_off',
          'history is off: podipam serve runs without its history store (see --history-db), and forecasts are made from it',
        );
      const [f] = poolForecasts(d.history, [{ name, capacity: Number(pool.capacity), allocated: pool.allocated }], { now: Date.now(), windowMs });
      return forecastJson(f as NonNullable<typeof f>, pool.capacity);
    },
  });
}

/**
 * Reservation routes: `GET /api/v1/reservations` (each with its CIDRs), `PUT
 * /api/v1/reservations/:name` (admin: `{"cidrs": ["10.0.0.5", "10.0.1.0/28"]}`, creates or
 * replaces it; answers once the node agents whose warm pools hold addresses inside it applied it,
 * `agents`, waiting at most `?warmTimeoutMs`) and `DELETE /api/v1/reservations/:name` (admin).
 * A reservation keeps the allocations inside it; new ones avoid it, and idle warm-pool addresses
 * inside it go back to the datastore.
 */
import { formatPrefix } from '../../ip/index.js';
import type { Reservation } from '../../cluster/records/index.js';
import type { ApiDeps } from './api-deps.js';
import { badField } from '../http/http-error.js';
import type { HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';
import { NAME, NAME_HINT, optionalStringArray } from '../http/validate.js';
import { agentsApplied, warmTimeout } from './warm-wait.js';
import { fieldErrors } from './field-errors.js';

export function addReservationRoutes(r: Router<HandlerSpec>, d: ApiDeps): void {
  r.add('GET', '/api/v1/reservations', { run: async () => ({ items: (await d.ipam.listReservations()).map(json) }) });

  r.add('PUT', '/api/v1/reservations/:name', {
    run: async (c) => {
      const name = reservationName(c.params.name);
      const timeoutMs = warmTimeout(c);
      const b = await c.body();
      const cidrs = optionalStringArray(b, 'cidrs') ?? []; // required, 1 to MAX_RESERVATION_CIDRS: checked against api-docs.ts's schema
      const res = await fieldErrors(() => d.ipam.putReservation(name, cidrs), 'cidrs');
      d.summary.invalidate();
      return { ...json(res), agents: await agentsApplied(d.store, { space: res.cidrs }, timeoutMs) };
    },
  });

  r.add('DELETE', '/api/v1/reservations/:name', {
    run: async (c) => {
      const name = reservationName(c.params.name);
      await d.ipam.deleteReservation(name);
      d.summary.invalidate();
      return { name, deleted: true };
    },
  });
}

function json(r: Reservation): { name: string; cidrs: string[] } {
  return { name: r.name, cidrs: r.cidrs.map(formatPrefix) };
}

function reservationName(name: string | undefined): string {
  if (name === undefined || !NAME.test(name)) throw badField('name', `reservation name must be ${NAME_HINT}: got ${JSON.stringify(name)}`);
  return name;
}

/**
 * ip-set routes: `GET /api/v1/ipsets` (each set with its size and held count),
 * `GET /api/v1/ipsets/:name` (each address free or held, by which pod), `POST /api/v1/ipsets`
 * (admin: `{"name", "pool", "addresses": ["10.0.0.5-10.0.0.9", …]}` or `{"name", "pool",
 * "count": N}`) and `DELETE /api/v1/ipsets/:name` (admin; 409 while an address is held).
 */
import { MAX_IP_SET_SIZE } from '../../cluster/records/index.js';
import type { ApiDeps } from './api-deps.js';
import { badField } from '../http/http-error.js';
import { fieldErrors } from './field-errors.js';
import type { HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';
import { NAME, NAME_HINT, optionalInt, optionalStringArray, requireString } from '../http/validate.js';

export function addIpSetRoutes(r: Router<HandlerSpec>, d: ApiDeps): void {
  r.add('GET', '/api/v1/ipsets', { run: async () => ({ items: await d.ipam.listIpSets() }) });
  r.add('GET', '/api/v1/ipsets/:name', { run: async (c) => d.ipam.showIpSet(setName(c.params.name)) });

  r.add('POST', '/api/v1/ipsets', {
    status: 201,
    run: async (c) => {
      const b = await c.body();
      const name = requireString(b, 'name', NAME, NAME_HINT);
      const pool = requireString(b, 'pool', NAME, NAME_HINT);
      const addresses = optionalStringArray(b, 'addresses');
      const count = optionalInt(b, 'count', 1, MAX_IP_SET_SIZE);
      if ((addresses === undefined) === (count === undefined))
        throw badField('addresses', 'give either "addresses" (addresses, ranges A-B and CIDRs) or "count", not both nor neither');
      return fieldErrors(
        async () => {
          const set = await d.ipam.createIpSet(name, pool, addresses !== undefined ? { ranges: addresses } : { count: count as number });
          d.summary.invalidate();
          return d.ipam.showIpSet(set.name);
        },
        addresses !== undefined ? 'addresses' : 'count',
      );
    },
  });

  r.add('DELETE', '/api/v1/ipsets/:name', {
    run: async (c) => {
      const name = setName(c.params.name);
      await d.ipam.deleteIpSet(name);
      d.summary.invalidate();
      return { name, deleted: true };
    },
  });
}

function setName(name: string | undefined): string {
  if (name === undefined || !NAME.test(name)) throw badField('name', `ip-set name must be ${NAME_HINT}: got ${JSON.stringify(name)}`);
  return name;
}

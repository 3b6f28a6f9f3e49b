/**
 * The API's route table as data: for each route serve answers ("METHOD PATTERN"), what it does,
 * its path and query parameters, its request body's schema and its answer's. The server checks
 * every body against it before the handler runs (http/check-body.ts), the OpenAPI document is
 * generated from it (openapi-document.ts), and `documentRoutes` refuses a router whose routes
 * and this table differ — so a route cannot be served undocumented nor documented unserved.
 */
import { MAX_IP_SET_SIZE, MAX_RESERVATION_CIDRS } from '../../cluster/records/index.js';
import { CNI_NAME } from '../../model/cni-name.js';
import type { JsonSchema, QueryParamDoc, RouteDoc } from '../http/route-doc.js';
import { HANDLE, HANDLE_HINT, NAME, NAME_HINT } from '../http/validate.js';
import { int, list, obj, ref, str, strOrNull, strings, time } from './api-schemas.js';
import { IFNAME } from './routes-write.js';

const name = { type: 'string', pattern: NAME.source, description: NAME_HINT } as const;
const REUSE_AFTER = {
  type: 'string',
  description: 'how long a released address stays unused cluster-wide: a duration such as 30s or 1m30s (at most 1h), or "off"',
} as const;
const body = (props: Readonly<Record<string, JsonSchema>>, required: readonly string[] = []): JsonSchema => ({
  type: 'object',
  properties: props,
  required,
  additionalProperties: false,
});
const q = (description: string, schema: JsonSchema = str): QueryParamDoc => ({ description, schema });
const intQ = (description: string, min: number, max: number, dflt: number): QueryParamDoc => ({
  description,
  schema: { type: 'integer', minimum: min, maximum: max, default: dflt },
});
const POOL = { name: 'the pool name' };
const WARM_TIMEOUT = intQ(
  "how long to wait (ms) for the node agents whose warm pools hold addresses the change takes out of service to apply it (see WarmAnswers); 0: don't wait",
  0,
  60_000,
  10_000,
);
const NO_BODY = body({});
const RESERVATION = obj({ name: str, cidrs: { type: 'array', items: { type: 'string', description: 'a CIDR (an address as /32 or /128)' } } });
const ok = (props: Readonly<Record<string, JsonSchema>>, optional: readonly string[] = []): JsonSchema => obj(props, optional);

export const ROUTE_DOCS: Readonly<Record<string, RouteDoc>> = {
  // The dashboard and plumbing (routes-static.ts).
  'GET /': { tag: 'dashboard', summary: 'the dashboard page', response: { contentType: 'text/html' } },
  'GET /index.html': { tag: 'dashboard', summary: 'the dashboard page', response: { contentType: 'text/html' } },
  'GET /assets/:file': {
    tag: 'dashboard',
    summary: "the dashboard's content-hashed script and stylesheet",
    params: { file: 'the asset name the page links' },
    response: { contentType: 'application/octet-stream' },
    errors: [404],
  },
  'GET /healthz': {
    tag: 'server',
    summary: 'liveness and the datastore probe (503 when the datastore does not answer)',
    response: ok({ status: { const: 'ok' }, datastore: str, datastoreWaitingMs: int, uptimeSeconds: int, loops: { type: 'object' } }, ['datastoreWaitingMs']),
  },
  'GET /metrics': {
    tag: 'server',
    summary: 'Prometheus metrics (text exposition format); reference: docs/metrics.md',
    response: { contentType: 'text/plain' },
  },
  'GET /api/v1/whoami': {
    tag: 'server',
    summary: 'the role of the token sent, and whether the server requires one',
    response: ok({ role: { enum: ['none', 'read', 'admin'] }, authRequired: { type: 'boolean' }, datastore: str }, ['datastore']),
  },
  'GET /api/v1': { tag: 'server', summary: 'an index of the routes, one line each', response: ok({ routes: strings }) },
  'GET /api/v1/openapi.json': {
    tag: 'server',
    summary: 'this document: OpenAPI 3.1, generated from the route table that validates requests',
    response: ok({ openapi: str, info: { type: 'object' }, paths: { type: 'object' } }),
  },

  // Reads (routes-read.ts, routes-pods.ts, routes-history.ts, routes-forecast.ts).
  'GET /api/v1/overview': {
    tag: 'pools',
    summary: 'totals and per-pool figures (the dashboard header)',
    response: ok({
      generatedAt: time,
      datastore: str,
      totals: ok({ pools: int, nodes: int, blocks: int, allocated: int, capacity: ref('Count') }),
      pools: { type: 'array', items: ref('Pool') },
    }),
  },
  'GET /api/v1/pools': { tag: 'pools', summary: 'pools with capacity, allocated, blocks', response: list(ref('Pool')) },
  'GET /api/v1/pools/:name': { tag: 'pools', summary: 'one pool', params: POOL, response: ref('Pool'), errors: [404] },
  'GET /api/v1/pools/:name/held': {
    tag: 'pools',
    summary: 'what the pool still holds, by node and pod (follow a drain to empty)',
    params: POOL,
    response: ref('PoolHeld'),
    errors: [404],
  },
  'GET /api/v1/pools/:name/blocks': {
    tag: 'pools',
    summary: "the pool's compact block map: claimed blocks as [cidr, nodeIndex, allocated], runs of unclaimed slots as counts",
    params: POOL,
    response: ok({
      pool: str,
      cidr: str,
      blockSize: int,
      blockCapacity: int,
      slots: { type: ['integer', 'null'] },
      claimed: int,
      nodes: strings,
      cells: { type: 'array', items: { anyOf: [int, { type: 'array', prefixItems: [str, { type: 'integer' }, int], minItems: 3, maxItems: 3 }] } },
    }),
    errors: [404],
  },
  'GET /api/v1/pools/:name/forecast': {
    tag: 'pools',
    summary:
      "the pool's usage over the window from the allocation history, the fitted trend and when it is full (docs/forecasts.md); 503 history_off without the history",
    params: POOL,
    query: {
      window: q('how much history the trend is fitted to: 10s to 30d, e.g. 30m, 6h, 7d (default 6h)', { type: 'string', pattern: '^[1-9][0-9]{0,6}[smhd]$' }),
    },
    response: ref('Forecast'),
    errors: [404, 503],
  },
  'GET /api/v1/blocks': {
    tag: 'blocks',
    summary: 'blocks, paged',
    query: {
      pool: q('only blocks of this pool'),
      node: q('only blocks affine to this node'),
      limit: intQ('page size', 1, 10_000, 1000),
      after: q('the `next` of the previous page'),
    },
    response: list(ok({ cidr: str, pool: strOrNull, node: strOrNull, allocated: int, capacity: int })),
    errors: [404],
  },
  'GET /api/v1/blocks/:cidr': {
    tag: 'blocks',
    summary: 'one block with its allocations',
    params: { cidr: 'the block CIDR, URL-encoded (10.244.0.64%2F26)' },
    response: ok({
      cidr: str,
      pool: strOrNull,
      node: strOrNull,
      capacity: int,
      allocated: int,
      allocations: { type: 'array', items: ok({ ip: str, handle: str, pod: strOrNull }) },
    }),
    errors: [404],
  },
  'GET /api/v1/nodes': {
    tag: 'nodes',
    summary: 'nodes with pod CIDRs, block and address counts (idle in a warm pool, in use), headroom per family',
    query: { q: q('only nodes whose name contains this'), limit: intQ('page size', 1, 10_000, 100), after: q('the `next` of the previous page') },
    response: list(ref('Node'), { total: int }),
  },
  'GET /api/v1/nodes/:name': { tag: 'nodes', summary: 'one node', params: { name: 'the node name' }, response: ref('Node'), errors: [404] },
  'GET /api/v1/allocations': {
    tag: 'allocations',
    summary: 'allocations, paged',
    query: {
      pool: q('only this pool'),
      node: q('only this node'),
      handle: q('only this handle'),
      limit: intQ('page size', 1, 5000, 100),
      after: q('the `next` of the previous page'),
    },
    response: list({ type: 'object', required: ['ip', 'handle'], properties: { ip: str, handle: str } }),
    errors: [404],
  },
  'GET /api/v1/check': {
    tag: 'check',
    summary: 'ipam check: leaks and problems (a shared report at most maxAge seconds old)',
    query: { maxAge: intQ('seconds a shared report may be old; 0 asks for a fresh one', 0, 3600, 10) },
    response: ok(
      {
        checkedAt: time,
        tookMs: { type: 'number' },
        leaks: { type: 'array', items: { type: 'object' } },
        problems: { type: 'array', items: { type: 'object' } },
        stickyHolds: { type: 'array' },
        borrowed: { type: 'array' },
      },
      ['stickyHolds', 'borrowed'],
    ),
  },
  'GET /api/v1/pods/:namespace/:name': {
    tag: 'pods',
    summary: 'every handle whose record names the pod, with its addresses',
    params: { namespace: 'the pod namespace', name: 'the pod name' },
    response: ok({ pod: str, items: { type: 'array', items: ref('PodHandle') } }),
    errors: [404],
  },
  'GET /api/v1/pods': {
    tag: 'pods',
    summary: 'the handles of pods of that name in any namespace',
    query: { name: { ...q('the pod name'), required: true } },
    response: ok({ items: { type: 'array', items: ref('PodHandle') } }),
  },
  'GET /api/v1/addresses/:ip': {
    tag: 'pods',
    summary: 'who holds an address: handle, pod, node, block',
    params: { ip: 'an IPv4 or IPv6 address' },
    response: { type: 'object', required: ['handle'], properties: { handle: str } },
    errors: [404],
  },
  'GET /api/v1/history': {
    tag: 'history',
    summary: "the allocation history: an address's holders (at one instant with `at`), a pod's addresses, or the export in time order",
    description: 'Times in: RFC 3339 with an offset or relative (now, -2h, -7d). With format=jsonl: application/x-ndjson, one object per line.',
    query: {
      address: q('an IPv4 or IPv6 address'),
      pod: q('NAMESPACE/NAME'),
      at: q('one instant (with address)'),
      since: q('from (inclusive)'),
      until: q('until (inclusive)'),
      limit: intQ('the export: records per page', 1, 10_000, 1000),
      format: q('json or jsonl', { enum: ['json', 'jsonl'] }),
    },
    response: { type: 'object', description: '{address, items, gaps} | {address, at, known, holder} | {pod, items, gaps} | {items, next?}' },
    errors: [503],
  },
  'GET /api/v1/ipsets': { tag: 'ipsets', summary: 'ip sets with their size and held count', response: list(ref('IpSet')) },
  'GET /api/v1/ipsets/:name': {
    tag: 'ipsets',
    summary: 'one ip set: each address free or held, by which pod',
    params: { name: 'the set name' },
    response: ref('IpSet'),
    errors: [404],
  },

  'GET /api/v1/reservations': {
    tag: 'reservations',
    summary: 'reservations: addresses and CIDRs never handed out (allocations inside them are kept)',
    response: list(RESERVATION),
  },
  // Writes (routes-write.ts, routes-ipsets.ts, routes-reservations.ts): the admin token.
  'POST /api/v1/pools': {
    tag: 'pools',
    summary: 'create a pool',
    body: body(
      {
        name,
        cidr: { type: 'string', pattern: '^[0-9a-fA-F.:]+/[0-9]{1,3}$', description: 'a CIDR such as 10.244.0.0/16' },
        blockSize: { type: 'integer', minimum: 0, maximum: 128 },
        nodeSelector: str,
        disabled: { type: 'boolean' },
        reuseAfter: REUSE_AFTER,
      },
      ['name', 'cidr'],
    ),
    response: ok({ name: str, created: { const: true } }),
    errors: [409],
  },
  'PATCH /api/v1/pools/:name': {
    tag: 'pools',
    summary: "change a pool's settings (the CIDR changes with /resize); disabling it or changing its node selector waits for the node agents (`agents`)",
    params: POOL,
    query: { warmTimeoutMs: WARM_TIMEOUT },
    body: body({ disabled: { type: 'boolean' }, blockSize: { type: 'integer', minimum: 0, maximum: 128 }, nodeSelector: str, reuseAfter: REUSE_AFTER }),
    response: ok(
      {
        name: str,
        disabled: { type: 'boolean' },
        blockSize: int,
        formerBlockSizes: { type: 'array', items: int },
        nodeSelector: str,
        reuseAfter: str,
        agents: ref('WarmAnswers'),
      },
      ['agents'],
    ),
    errors: [404, 409],
  },
  'POST /api/v1/pools/:name/resize': {
    tag: 'pools',
    summary: 'grow a pool, or shrink it (refused while addresses lie outside)',
    params: POOL,
    body: body({ cidr: { type: 'string', pattern: '^\\S+$', description: 'a CIDR' } }, ['cidr']),
    response: ok({ name: str, cidr: str, resized: { enum: ['grow', 'shrink', 'same'] }, removedBlocks: int }),
    errors: [404, 409],
  },
  'POST /api/v1/pools/:name/drain': {
    tag: 'pools',
    summary: 'no new addresses from the pool; answers, once the node agents applied it (`agents`), what it still holds',
    params: POOL,
    query: { warmTimeoutMs: WARM_TIMEOUT },
    body: NO_BODY,
    response: ref('PoolHeld'),
    errors: [404],
  },
  'POST /api/v1/pools/:name/undrain': {
    tag: 'pools',
    summary: 'serve new addresses again; answers what it holds',
    params: POOL,
    body: NO_BODY,
    response: ref('PoolHeld'),
    errors: [404],
  },
  'DELETE /api/v1/pools/:name': {
    tag: 'pools',
    summary: 'delete a pool (refused while addresses are allocated)',
    params: POOL,
    response: ok({ name: str, deleted: { const: true } }),
    errors: [404, 409],
  },
  'POST /api/v1/nodes': {
    tag: 'nodes',
    summary: 'register a node',
    body: body({ name, labels: { type: 'object', additionalProperties: str } }, ['name']),
    response: ok({ name: str, labels: { type: 'object' }, podCIDRs: strings, createdAt: time }, ['createdAt']),
    errors: [409],
  },
  'DELETE /api/v1/nodes/:name': {
    tag: 'nodes',
    summary: "delete a node's record (its blocks are freed by cluster GC after the grace period, or at once with release=now)",
    params: { name: 'the node name' },
    query: { release: q('"now": release its blocks at once', { const: 'now' }) },
    response: ok({ name: str, deleted: { const: true }, releasedPodCIDRs: strings, releasedBlocks: strings, releasedHandles: int }, [
      'releasedBlocks',
      'releasedHandles',
    ]),
    errors: [404],
  },
  'POST /api/v1/allocations': {
    tag: 'allocations',
    summary: 'allocate addresses for a handle (or for network + containerId + ifname) on a node',
    body: body(
      {
        node: { type: 'string', pattern: NAME.source, description: `a node name: ${NAME_HINT}` },
        handle: { type: 'string', pattern: HANDLE.source, description: HANDLE_HINT },
        network: { type: 'string', pattern: CNI_NAME.source, description: 'a CNI network name' },
        containerId: { type: 'string', pattern: CNI_NAME.source, description: 'a CNI container id (letters, digits, "_", "." and "-")' },
        ifname: { type: 'string', pattern: IFNAME.source, description: 'an interface name of at most 15 characters without "/", ":" or spaces' },
        pools: { type: 'array', items: name },
        ips: { type: 'array', items: str },
      },
      ['node'],
    ),
    response: ok({ handle: str, node: str, ips: strings, addresses: { type: 'array', items: { type: 'object', required: ['ip'], properties: { ip: str } } } }),
    errors: [409, 503],
  },
  'DELETE /api/v1/allocations/:handle': {
    tag: 'allocations',
    summary: 'release everything the handle holds',
    params: { handle: 'the handle id, URL-encoded' },
    query: { node: q('only on this node') },
    response: ok({ handle: str, released: strings }),
  },
  'POST /api/v1/release': {
    tag: 'allocations',
    summary: 'release an address, a handle, or an address only while that handle holds it',
    body: body({ ip: str, handle: { type: 'string', pattern: HANDLE.source, description: HANDLE_HINT } }),
    response: {
      anyOf: [ok({ handle: str, released: strings }), ok({ ip: str, released: strings, heldBy: { anyOf: [str, { type: 'null' }, { type: 'object' }] } })],
    },
  },
  'POST /api/v1/ipsets': {
    tag: 'ipsets',
    summary: 'create an ip set: fixed addresses (addresses, ranges A-B, CIDRs) or a count, out of a pool',
    body: body({ name, pool: name, addresses: { type: 'array', items: str }, count: { type: 'integer', minimum: 1, maximum: MAX_IP_SET_SIZE } }, [
      'name',
      'pool',
    ]),
    response: ref('IpSet'),
    errors: [404, 409],
  },
  'PUT /api/v1/reservations/:name': {
    tag: 'reservations',
    summary:
      'create or replace a reservation; answers once the node agents whose warm pools hold idle addresses inside it applied it (`agents`: they hand none of them out and give them back)',
    params: { name: 'the reservation name' },
    query: { warmTimeoutMs: WARM_TIMEOUT },
    body: body(
      {
        cidrs: {
          type: 'array',
          minItems: 1,
          maxItems: MAX_RESERVATION_CIDRS,
          description: `the addresses and CIDRs to reserve (1 to ${MAX_RESERVATION_CIDRS})`,
          items: { type: 'string', description: 'an address or a CIDR' },
        },
      },
      ['cidrs'],
    ),
    response: ok({ name: str, cidrs: strings, agents: ref('WarmAnswers') }),
  },
  'DELETE /api/v1/reservations/:name': {
    tag: 'reservations',
    summary: 'delete a reservation: its addresses may be handed out again',
    params: { name: 'the reservation name' },
    response: ok({ name: str, deleted: { const: true } }),
    errors: [404],
  },
  'DELETE /api/v1/ipsets/:name': {
    tag: 'ipsets',
    summary: 'delete an ip set (409 while an address is held)',
    params: { name: 'the set name' },
    response: ok({ name: str, deleted: { const: true } }),
    errors: [404, 409],
  },
};

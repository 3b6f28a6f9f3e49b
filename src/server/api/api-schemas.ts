/**
 * The JSON schemas of the API's answers, shared by several routes (api-docs.ts): OpenAPI's
 * `components.schemas`. Counts past 2^53 − 1 are decimal strings (src/util/exact-json.ts).
 */
import type { JsonSchema } from '../http/route-doc.js';

const int = { type: 'integer', minimum: 0 } as const;
const str = { type: 'string' } as const;
const strOrNull = { type: ['string', 'null'] } as const;
const strings = { type: 'array', items: str } as const;
const time = { type: 'string', format: 'date-time' } as const;

/** An object of `props`, every one required unless listed in `optional`. */
export function obj(props: Readonly<Record<string, JsonSchema>>, optional: readonly string[] = []): JsonSchema {
  return { type: 'object', properties: props, required: Object.keys(props).filter((k) => !optional.includes(k)) };
}
export function ref(name: keyof typeof SCHEMAS): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}
export const list = (item: JsonSchema, extra: Readonly<Record<string, JsonSchema>> = {}): JsonSchema =>
  obj({ items: { type: 'array', items: item }, next: str, ...extra }, ['next']);

export const SCHEMAS = {
  Error: {
    description: 'Every error answer: a code to branch on, a message for people, the request field it is about',
    ...obj({ error: obj({ code: str, message: str, field: str }, ['field']) }),
  },
  Count: { description: 'a count: a number, or a decimal string past 2^53 − 1', type: ['integer', 'string'], pattern: '^[0-9]+$', minimum: 0 },
  Pool: obj({
    name: str,
    cidr: str,
    family: { enum: [4, 6] },
    blockSize: int,
    nodeSelector: str,
    disabled: { type: 'boolean' },
    draining: { type: 'boolean' },
    deleting: { type: 'boolean' },
    formerBlockSizes: { type: 'array', items: int },
    capacity: { $ref: '#/components/schemas/Count' },
    allocated: int,
    blocks: int,
    blockSlots: { $ref: '#/components/schemas/Count' },
    blockCapacity: int,
    reuseAfter: str,
  }),
  Node: obj(
    {
      name: str,
      podCIDRs: strings,
      labels: { type: 'object', additionalProperties: str },
      registered: { type: 'boolean' },
      deletedAt: time,
      deleting: { type: 'boolean' },
      createdAt: time,
      blocks: int,
      allocated: int,
      idle: int,
      inUse: int,
      headroom: { type: 'array', items: obj({ family: { enum: [4, 6] }, headroom: int, free: int, idle: int, claimable: int, claimableBlocks: int }) },
    },
    ['deletedAt', 'createdAt'],
  ),
  PoolHeld: obj(
    {
      name: str,
      state: str,
      draining: { type: 'boolean' },
      disabled: { type: 'boolean' },
      allocated: int,
      inUse: int,
      idle: int,
      blocks: int,
      nodes: { type: 'array', items: { type: 'object', required: ['node'], properties: { node: str } } },
      agents: { $ref: '#/components/schemas/WarmAnswers' },
    },
    ['agents'],
  ),
  WarmAnswers: {
    description:
      "After a change that takes addresses out of service (drain, disable, a node selector): the node agents whose warm pools hold some of them. `answered`: the agent applied the change (its holder view names the change's config generation) and hands none of them to a new pod from now on (a sticky reservation still goes back to its own pod); what pods still hold there (kept until their DEL), what is cooling or kept for sticky pods (given back when their time ends). `silent`: no answer within warmTimeoutMs (agent stopped, or cut off from the datastore; `oldAgent`: a version that does not answer): it may still hand out `idle` until it applies the change.",
    ...obj({
      answered: {
        type: 'array',
        items: obj({
          node: str,
          at: time,
          ms: int,
          inUse: { type: 'array', items: obj({ addr: str, pod: str, attachment: str }, ['pod']) },
          cooling: strings,
          sticky: strings,
          idle: strings,
        }),
      },
      silent: { type: 'array', items: obj({ node: str, idle: strings, oldAgent: { const: true } }, ['oldAgent']) },
      unreadableBlocks: {
        ...strings,
        description: 'block records that do not decode (ipam check names them): the agents holding addresses in them were not waited for',
      },
    }),
  },
  PodHandle: obj(
    { handle: str, pod: strOrNull, node: str, network: strOrNull, addresses: { type: 'array', items: obj({ ip: str, block: str, pool: str }, ['pool']) } },
    ['pod', 'network'],
  ),
  Forecast: obj({
    pool: str,
    capacity: { $ref: '#/components/schemas/Count' },
    allocated: int,
    trend: obj({
      state: { enum: ['filling', 'not-filling', 'full', 'unknown'] },
      ratePerHour: { type: 'number', description: 'least-squares slope of the usage series, addresses per hour' },
      secondsToFull: { type: ['number', 'null'], minimum: 0 },
      fullAt: { anyOf: [time, { type: 'null' }] },
    }),
    method: obj({ fit: { const: 'least-squares' }, source: { const: 'history' }, window: str, since: time, until: time, samples: int, step: str, text: str }),
    series: { type: 'array', items: obj({ at: time, used: int }) },
  }),
  IpSet: { type: 'object', required: ['name', 'pool'], properties: { name: str, pool: str } },
  HistoryItems: {
    type: 'object',
    properties: { items: { type: 'array', items: { type: 'object' } }, gaps: { type: 'array', items: { type: 'object' } }, next: str },
  },
} as const satisfies Readonly<Record<string, JsonSchema>>;

export { int, str, strOrNull, strings, time };

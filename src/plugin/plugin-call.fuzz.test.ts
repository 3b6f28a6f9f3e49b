/**
 * Fuzzing of everything the CNI plugin reads from outside — the network config on stdin
 * (top level and the `ipam` section of the local and the cluster back end), the CNI_*
 * environment and CNI_ARGS — through `pluginCall`, the entry the per-pod process and the agent
 * both use. Valid configs of each back end are mutated (fields replaced by odd values,
 * deleted, added; several at once), the environment and CNI_ARGS drawn at random, and raw
 * bytes sent as stdin. Every call must answer within its bound, with exit 0 and a JSON result
 * (ADD) or nothing, or exit 1 with the CNI error JSON: a numeric code other than 999
 * ("unclassified"), a message, no stack trace; a config error (code 7) after one field was
 * replaced names that field. Nothing is written outside the test's directories (the data
 * directory and the datastore are pinned after mutation). Seeds are printed; see
 * test/helpers/fuzz.ts to replay.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ClusterIpam } from '../cluster/index.js';
import { openStore, type Store } from '../store/index.js';
import { anyBytes, anyText, bounded, checkCniAnswer, fc, fuzz, mutateAt, oddValue, pathsOf } from '../../test/helpers/fuzz.js';
import { makeTempDir, type TempDir } from '../../test/helpers/tmp.js';
import { pluginCall } from './plugin-call.js';

const FILE = 'plugin-call.fuzz';
let tmp: TempDir;
let store: Store;
const DATASTORE = 'memory:cni-fuzz';

before(async () => {
  tmp = makeTempDir('cni-fuzz');
  store = await openStore(DATASTORE); // kept open: the named memory store lives while a store is open
  const c = new ClusterIpam(store);
  await c.createPool({ name: 'p4', cidr: '10.88.0.0/16', blockSize: 28 });
  await c.createPool({ name: 'p6', cidr: 'fd00:88::/64', blockSize: 124 });
});
after(async () => {
  await store?.close();
  tmp?.remove();
});

const localConf = (): Record<string, unknown> => ({
  cniVersion: '1.1.0',
  name: 'fuzznet',
  type: 'bridge',
  ipam: {
    type: 'podipam',
    ranges: [[{ subnet: '10.1.0.0/24', rangeStart: '10.1.0.10', rangeEnd: '10.1.0.200', gateway: '10.1.0.1' }], [{ subnet: 'fd00:1::/120' }]],
    routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0', gw: 'fd00:1::1' }],
    dataDir: join(tmp.path, 'local'),
  },
  args: { cni: { ips: ['10.1.0.50'] } },
  runtimeConfig: { ips: ['fd00:1::50/120'] },
});

const clusterConf = (): Record<string, unknown> => ({
  cniVersion: '1.1.0',
  name: 'fuzzc',
  type: 'bridge',
  ipam: { type: 'podipam', datastore: DATASTORE, nodeName: 'n1', pools: ['p4', 'p6'], cacheDir: join(tmp.path, 'cache'), routes: [{ dst: '0.0.0.0/0' }] },
});

/**
 * After mutation: the data directory, datastore and cache directory are ours again. A value
 * that is not a string stays (the back end must refuse it, naming the field); a string, or a
 * missing key (which means the default path), becomes ours, so nothing is written elsewhere.
 */
const PINNED = ['datadir', 'datastore', 'cachedir'];
function pin(conf: unknown): unknown {
  if (conf === null || typeof conf !== 'object' || Array.isArray(conf)) return conf;
  const c = conf as Record<string, unknown>;
  c['cni.dev/valid-attachments'] ??= [];
  const ipam = c.ipam;
  if (ipam === null || typeof ipam !== 'object' || Array.isArray(ipam)) return conf;
  const o = ipam as Record<string, unknown>;
  const cluster = Object.keys(o).some((k) => k.toLowerCase() === 'datastore');
  const ours: Record<string, string> = cluster ? { datastore: DATASTORE, cacheDir: join(tmp.path, 'cache') } : { dataDir: join(tmp.path, 'local') };
  for (const [key, value] of Object.entries(ours)) {
    const found = Object.keys(o).filter((k) => k.toLowerCase() === key.toLowerCase());
    const keep = found[0] !== undefined && typeof o[found[0]] !== 'string' ? found[0] : undefined;
    for (const k of found) if (k !== keep) delete o[k];
    if (keep === undefined) o[key] = value;
  }
  return conf;
}

const argKey = fc.oneof(fc.constantFrom('IgnoreUnknown', 'IP', 'K8S_POD_NAME', 'K8S_POD_NAMESPACE', 'K8S_POD_INFRA_CONTAINER_ID', 'K8S_POD_UID'), anyText(12));
const argValue = fc.oneof(fc.constantFrom('1', 'true', 'false', '10.1.0.77', 'fd00:1::77', '10.88.0.5', '10.1.0.77,fd00:1::77', ''), anyText(20));
const cniArgs = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  fc.array(fc.tuple(argKey, argValue), { maxLength: 4 }).map((kv) => kv.map(([k, v]) => `${k}=${v}`).join(';')),
  anyText(40),
);
const containerId = fc.oneof(
  { weight: 8, arbitrary: fc.stringMatching(/^[a-f0-9]{8,64}$/) },
  fc.constantFrom('', '../x', '.hidden', 'a'.repeat(300)),
  anyText(20),
);
const ifname = fc.oneof({ weight: 8, arbitrary: fc.constantFrom('eth0', 'net1') }, fc.constantFrom('', '.', '..', 'a/b', 'x'.repeat(16)), anyText(18));

const env = fc.record({
  CNI_COMMAND: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('ADD', 'DEL', 'CHECK', 'GC', 'STATUS') },
    { weight: 1, arbitrary: fc.oneof(fc.constantFrom('', 'VERSION', 'add'), anyText(8)) },
  ),
  CNI_CONTAINERID: containerId,
  CNI_IFNAME: ifname,
  CNI_NETNS: fc.oneof({ weight: 8, arbitrary: fc.constant('/var/run/netns/fuzz') }, fc.constant(''), anyText(20)),
  CNI_PATH: fc.constant('/opt/cni/bin'),
  CNI_ARGS: cniArgs,
  PODIPAM_LOCK_TIMEOUT_MS: fc.option(fc.oneof(fc.constantFrom('0', '100', '-1', '3600001', 'x'), anyText(6)), { nil: undefined }),
  NODENAME: fc.option(anyText(10), { nil: undefined }),
});

type Mutation = { path: (string | number)[]; change: { kind: 'set'; value: unknown } | { kind: 'delete' } };

function mutations(base: Record<string, unknown>): fc.Arbitrary<Mutation[]> {
  const paths = pathsOf(base);
  const path = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...paths) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom<(string | number)[]>([], ['ipam']),
          fc.oneof(anyText(10), fc.constantFrom('subnet', 'rangeStart', 'agent', 'Ranges', 'IPAM', 'cniVersion', 'pools', 'nodeName')),
        )
        .map(([p, k]) => [...p, k]),
    },
  );
  const change = fc.oneof(
    { weight: 4, arbitrary: oddValue().map((value) => ({ kind: 'set' as const, value })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'delete' as const }) },
  );
  return fc.array(fc.record({ path, change }), { minLength: 0, maxLength: 3 });
}

const casesOf = (base: () => Record<string, unknown>) =>
  fc.tuple(env, mutations(base())).map(([e, ms]) => {
    let conf: unknown = base();
    for (const m of ms) conf = mutateAt(conf, m.path, m.change);
    return { env: e, mutations: ms, stdin: JSON.stringify(pin(conf)) };
  });

/**
 * host-local's own messages, which the local back end repeats word for word (the differential
 * tests hold it to them): they say which range set is wrong rather than the key.
 */
const HOST_LOCAL_MESSAGES = [/^invalid range set \d+: /, /^no IP ranges specified$/, /^range set \d+ overlaps with \d+$/];

/** The name a message should use for the field at `path` (the last key, or the array's key). */
function fieldName(path: readonly (string | number)[]): string | undefined {
  for (let i = path.length - 1; i >= 0; i--) if (typeof path[i] === 'string') return path[i] as string;
  return undefined;
}

/** Outcomes per verb and code, printed after each run: shows the cases reach the back ends. */
const tally = new Map<string, number>();
function count(verb: string | undefined, code: number | undefined): void {
  const k = `${['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'].includes(verb ?? '') ? verb : 'other'}:${code ?? 'ok'}`;
  tally.set(k, (tally.get(k) ?? 0) + 1);
}
function printTally(t: { diagnostic(m: string): void; name: string }): void {
  const line = [...tally]
    .sort()
    .map(([k, n]) => `${k}=${n}`)
    .join(' ');
  t.diagnostic(`outcomes (verb:code=count): ${line}`);
  console.log(`${t.name}: outcomes ${line}`);
  tally.clear();
}

async function runCase(c: { env: Record<string, string | undefined>; mutations: Mutation[]; stdin: string }): Promise<void> {
  const e: NodeJS.ProcessEnv = {};
  // As a process receives them: environment strings are decoded from bytes (never a lone surrogate).
  for (const [k, v] of Object.entries(c.env)) if (v !== undefined) e[k] = Buffer.from(v).toString('utf8');
  const a = await bounded(
    'pluginCall',
    15_000,
    pluginCall(e, () => c.stdin),
  );
  const err = checkCniAnswer(a, e.CNI_COMMAND);
  count(e.CNI_COMMAND, err?.code);
  // One field replaced and the config refused as such: the message names that field.
  const only = c.mutations.length === 1 ? c.mutations[0]! : undefined;
  // A pod or namespace name in CNI_ARGS that Kubernetes would refuse is refused first, naming CNI_ARGS.
  if (err && err.code === 7 && only && only.change.kind === 'set' && only.path.length > 1 && !err.msg.startsWith('CNI_ARGS')) {
    const name = fieldName(only.path);
    if (
      name !== undefined &&
      /^[A-Za-z]+$/.test(name) &&
      !(PINNED.includes(name.toLowerCase()) && typeof (only.change as { value: unknown }).value === 'string')
    ) {
      const names = `${err.msg} ${err.details ?? ''}`.toLowerCase().includes(name.toLowerCase());
      assert.ok(names || HOST_LOCAL_MESSAGES.some((re) => re.test(err.msg)), `the error names ${only.path.join('.')}: ${err.msg}`);
    }
  }
}

test('fuzz CNI config (local back end), env and CNI_ARGS through pluginCall', { timeout: 180_000 }, async (t) => {
  await fuzz(t, { runs: 400, file: FILE }, casesOf(localConf), runCase);
  const adds = tally.get('ADD:ok') ?? 0;
  printTally(t);
  assert.ok(adds > 0, 'some mutated configs were valid and allocated');
});

test('fuzz CNI config (cluster back end), env and CNI_ARGS through pluginCall', { timeout: 180_000 }, async (t) => {
  await fuzz(t, { runs: 300, file: FILE }, casesOf(clusterConf), runCase);
  const adds = tally.get('ADD:ok') ?? 0;
  printTally(t);
  assert.ok(adds > 0, 'some mutated configs were valid and allocated');
});

test('fuzz raw stdin: random bytes and random JSON are refused with a decode or config error', { timeout: 120_000 }, (t) =>
  fuzz(
    t,
    { runs: 400, file: FILE },
    fc.tuple(
      fc.constantFrom('ADD', 'DEL', 'CHECK', 'GC', 'STATUS'),
      fc.oneof(
        anyBytes(200).map((b) => b.toString('latin1')),
        anyText(200),
        fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(pin(v))),
      ),
    ),
    async ([verb, stdin]) => {
      const a = await bounded(
        'pluginCall',
        15_000,
        pluginCall({ CNI_COMMAND: verb, CNI_CONTAINERID: 'c0ffee', CNI_IFNAME: 'eth0', CNI_NETNS: '/var/run/netns/x', CNI_PATH: '/opt/cni/bin' }, () => stdin),
      );
      checkCniAnswer(a, verb);
    },
  ),
);

/**
 * Fuzzing of the datastore record decoders against what an older or corrupt writer may have
 * left: every record kind (block, handle, pool, affinity, reservation, node) as valid JSON
 * mutated field by field, as random JSON and as random bytes. A decoder returns a record that
 * re-encodes to itself, or throws CorruptRecordError naming the key (TypeError naming the key
 * for node records, which callers skip) — nothing else. Then the service on a store holding
 * one such record: assign, release and `check` answer or fail with the service's own error
 * classes (a corrupt record reported as such), never an engine error or a hang; `check`
 * reports the record. Seeds printed; see test/helpers/fuzz.ts to replay.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrefix } from '../../ip/index.js';
import { decodeNodeRecord, encodeNodeRecord, nodeKey } from '../../model/node-record.js';
import { openStore, type Entry } from '../../store/index.js';
import { isEngineError } from '../../util/engine-error.js';
import { anyBytes, anyText, bounded, fc, fuzz, mutateAt, oddValue, pathsOf } from '../../../test/helpers/fuzz.js';
import { decodeAffinity, encodeAffinity } from './affinity-record.js';
import { decodeBlock, encodeBlock } from './block-record.js';
import { CorruptRecordError } from './errors.js';
import { decodeHandle, encodeHandle } from './handle-record.js';
import { ClusterIpam } from '../index.js';
import { affinityKey, blockKey, handleKey, poolKey, reservationKey } from './keys.js';
import { decodePool, encodePool, validatePoolSpec } from './pool-record.js';
import { decodeReservation, encodeReservation } from './reservation-record.js';

const FILE = 'records.fuzz';
const BLOCK = parsePrefix('10.20.0.64/26');
const entry = (key: string, value: string): Entry => ({ key, value, rev: 1n }) as unknown as Entry;

interface Kind {
  readonly name: string;
  readonly key: string;
  readonly valid: string;
  decode(e: Entry): unknown;
  encode(v: unknown): string;
  /** The error class a corrupt record must raise. */
  readonly error: (e: unknown) => boolean;
}

const corrupt = (key: string) => (e: unknown) => e instanceof CorruptRecordError && e.key === key;
const KINDS: readonly Kind[] = [
  {
    name: 'block',
    key: blockKey(BLOCK),
    valid: encodeBlock({
      cidr: BLOCK,
      affinity: 'n1',
      next: 5,
      allocations: new Map([
        [2, 'net.a.eth0'],
        [3, 'net.b.eth0'],
        [4, 'net.b.eth0'],
      ]),
    }),
    decode: decodeBlock,
    encode: (v) => encodeBlock(v as Parameters<typeof encodeBlock>[0]),
    error: corrupt(blockKey(BLOCK)),
  },
  {
    name: 'handle',
    key: handleKey('net.a.eth0'),
    valid: encodeHandle({
      node: 'n1',
      network: 'net',
      containerId: 'a',
      ifname: 'eth0',
      blocks: new Map([
        ['10.20.0.64/26', 1],
        ['fd00:20::/122', 1],
      ]),
    }),
    decode: decodeHandle,
    encode: (v) => encodeHandle(v as Parameters<typeof encodeHandle>[0]),
    error: corrupt(handleKey('net.a.eth0')),
  },
  {
    name: 'pool',
    key: poolKey('p4'),
    valid: encodePool(validatePoolSpec({ name: 'p4', cidr: '10.20.0.0/16', blockSize: 26, nodeSelector: 'zone=a' })),
    decode: decodePool,
    encode: (v) => encodePool(v as Parameters<typeof encodePool>[0]),
    error: corrupt(poolKey('p4')),
  },
  {
    name: 'affinity',
    key: affinityKey('n1', BLOCK),
    valid: encodeAffinity({ state: 'confirmed', claimedAt: '2026-01-01T00:00:00.000Z' }),
    decode: decodeAffinity,
    encode: (v) => encodeAffinity(v as Parameters<typeof encodeAffinity>[0]),
    error: corrupt(affinityKey('n1', BLOCK)),
  },
  {
    name: 'reservation',
    key: reservationKey('gw'),
    valid: encodeReservation({ name: 'gw', cidrs: [parsePrefix('10.20.0.0/30'), parsePrefix('fd00:20::/126')] }),
    decode: decodeReservation,
    encode: (v) => encodeReservation(v as Parameters<typeof encodeReservation>[0]),
    error: corrupt(reservationKey('gw')),
  },
  {
    name: 'node',
    key: nodeKey('n1'),
    valid: encodeNodeRecord({ name: 'n1', labels: { zone: 'a' }, podCIDRs: ['10.30.1.0/24'], createdAt: '2026-01-01T00:00:00.000Z' }),
    // A node record keeps fields it does not know (a newer writer's): compare the known ones.
    decode: (e) => {
      const r = decodeNodeRecord(e.key, e.value);
      return { name: r.name, labels: r.labels, podCIDRs: r.podCIDRs, createdAt: r.createdAt, ...(r.deleting === undefined ? {} : { deleting: r.deleting }) };
    },
    encode: (v) => encodeNodeRecord(v as Parameters<typeof encodeNodeRecord>[0]),
    error: (e) => e instanceof TypeError && e.message.includes(nodeKey('n1')) && !isEngineError(e),
  },
];

/** A record's text as a writer might have left it: the valid one mutated, random JSON, or random bytes. */
function recordText(valid: string): fc.Arbitrary<string> {
  const tree = JSON.parse(valid) as unknown;
  const paths = pathsOf(tree);
  const mutation = fc.record({
    path: fc.oneof(
      fc.constantFrom(...paths),
      anyText(8).map((k) => [k]),
    ),
    change: fc.oneof(
      oddValue().map((value) => ({ kind: 'set' as const, value })),
      fc.constant({ kind: 'delete' as const }),
    ),
  });
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .array(mutation, { minLength: 1, maxLength: 3 })
        .map((ms) => JSON.stringify(ms.reduce<unknown>((t, m) => mutateAt(t, m.path, m.change), tree))),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: anyBytes(120).map((b) => b.toString('utf8')) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: valid.length }).map((n) => valid.slice(0, n)) },
  );
}

for (const kind of KINDS) {
  test(`fuzz the ${kind.name} record decoder: a record that re-encodes to itself, or a corrupt-record error naming the key`, (t) =>
    fuzz(t, { runs: 1000, file: FILE }, recordText(kind.valid), (text) => {
      let v: unknown;
      try {
        v = kind.decode(entry(kind.key, text));
      } catch (e) {
        assert.ok(kind.error(e), `${kind.name} ${JSON.stringify(text)}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
        return;
      }
      // What decodes is a record: encoding it and decoding again gives the same record.
      const again = kind.decode(entry(kind.key, kind.encode(v)));
      assert.deepEqual(again, v, `${kind.name} ${JSON.stringify(text)} round trip`);
    }));
}

const KNOWN_ERRORS = new Set([
  'CorruptRecordError',
  'PoolExhaustedError',
  'NoPoolError',
  'AddressUnavailableError',
  'ContentionError',
  'NotFoundError',
  'PoolInUseError',
]);

test('fuzz the cluster service on a store holding one corrupt record: its own errors only, check reports it', { timeout: 120_000 }, (t) => {
  const planted = fc
    .tuple(
      fc.constantFrom(
        ...KINDS.filter((k) => k.name !== 'node'),
        KINDS.find((k) => k.name === 'node')!,
      ),
      fc.nat(),
    )
    .chain(([kind]) => recordText(kind.valid).map((text) => ({ kind, text })));
  return fuzz(t, { runs: 200, file: FILE }, planted, async ({ kind, text }) => {
    const store = await openStore('memory:');
    try {
      const c = new ClusterIpam(store);
      await c.createPool({ name: 'p4', cidr: '10.20.0.0/16', blockSize: 26 });
      await c.createPool({ name: 'p6', cidr: 'fd00:20::/64', blockSize: 122 });
      await c.putReservation('gw', ['10.20.0.0/30']);
      await c.assign({ node: 'n1', handle: 'net.a.eth0', auto: 'each-family' });
      await c.assign({ node: 'n1', handle: 'net.b.eth0', auto: 'each-family' });
      const old = await store.get(kind.key);
      const r = await store.txn(old ? [{ key: kind.key, rev: old.rev }] : [], [{ type: 'put', key: kind.key, value: text }]);
      assert.ok(r.succeeded);
      const fresh = new ClusterIpam(store); // no hints: it reads what is stored
      const calls: [string, () => Promise<unknown>][] = [
        ['assign n1', () => fresh.assign({ node: 'n1', handle: 'net.c.eth0', auto: 'each-family' })],
        ['assign n2', () => fresh.assign({ node: 'n2', handle: 'net.d.eth0', auto: 'each-family' })],
        ['release a', () => fresh.releaseHandle('net.a.eth0', 'n1')],
        ['release c', () => fresh.releaseHandle('net.c.eth0', 'n1')],
        ['usage', () => fresh.usage()],
      ];
      for (const [what, call] of calls) {
        try {
          await bounded(what, 10_000, call());
        } catch (e) {
          assert.ok(
            e instanceof Error && KNOWN_ERRORS.has(e.name) && !isEngineError(e),
            `${what} with ${kind.name} ${JSON.stringify(text)}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`,
          );
        }
      }
      const report = await bounded('check', 10_000, fresh.check());
      let decodes = true;
      try {
        kind.decode(entry(kind.key, (await store.get(kind.key))?.value ?? kind.valid));
      } catch {
        decodes = false;
      }
      if (!decodes && kind.name !== 'node' && kind.name !== 'reservation') {
        assert.ok(
          report.problems.some((p) => p.kind === 'corrupt-record' && p.key === kind.key),
          `check reports the corrupt ${kind.name}: ${JSON.stringify(report.problems)}`,
        );
      }
    } finally {
      await store.close();
    }
  });
});

import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { WatchEvent } from '../store/index.js';
import { replacedCause, withoutStaleStamps } from './replaced-datastore.js';

const pos = { source: 'sqlite:/d.db', revision: 40, at: 1000, identity: 'sqlite file a1' };

it('replacedCause: another identity, or a revision below the position; the same datastore further on is not', () => {
  assert.equal(replacedCause(undefined, 'sqlite file b2', 3), undefined, 'a new history follows whatever it finds');
  assert.equal(replacedCause(pos, 'sqlite file a1', 40), undefined);
  assert.equal(replacedCause(pos, 'sqlite file a1', 90), undefined);
  assert.match(replacedCause(pos, 'sqlite file b2', 90) ?? '', /replaced or restored: it is sqlite file b2, the history followed sqlite file a1/);
  assert.match(replacedCause(pos, 'sqlite file a1', 39) ?? '', /revision went back from 40 to 39/);
  const { identity: _, ...older } = pos; // a file written before identities were kept
  assert.equal(replacedCause(older, 'sqlite file b2', 40), undefined);
  assert.match(replacedCause(older, 'sqlite file b2', 12) ?? '', /went back/);
});

it("withoutStaleStamps drops only stamp puts older than the restore's gap", () => {
  const ev = (key: string, value: string, type: 'put' | 'delete' = 'put'): WatchEvent => ({ type, key, value, modRevision: 7 });
  const events = [
    ev('blocks/10.0.0.0-28', '{}'),
    ev('stamps/n1', '{"at":500}'),
    ev('stamps/n2', '{"at":1500}'),
    ev('stamps/n3', '', 'delete'),
    ev('stamps/n4', 'garbled'),
  ];
  assert.equal(withoutStaleStamps(events, 0), events);
  assert.deepEqual(
    withoutStaleStamps(events, 1000).map((e) => e.key),
    ['blocks/10.0.0.0-28', 'stamps/n2', 'stamps/n3', 'stamps/n4'],
  );
});

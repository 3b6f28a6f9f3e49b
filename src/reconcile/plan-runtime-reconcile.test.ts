import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type NodeAllocation, type SandboxList, planRuntimeReconcile } from './plan-runtime-reconcile.js';

const G = 240_000;
const alloc = (containerId: string, since?: number, firstSeen?: number): NodeAllocation => ({
  id: `x/${containerId}`,
  containerId,
  ifname: 'eth0',
  ...(since === undefined ? {} : { since }),
  ...(firstSeen === undefined ? {} : { firstSeen }),
});
const list = (at: number, ...ids: string[]): SandboxList => ({ at, ids: new Set(ids) });
const plan = (allocations: NodeAllocation[], lists: SandboxList[], inFlight: string[] = [], now = 1_000_000) =>
  planRuntimeReconcile({ allocations, lists, inFlight: new Set(inFlight), graceMs: G, spacingMs: 5_000, now });
const freed = (p: ReturnType<typeof plan>) => p.free.map((f) => f.allocation.containerId);
const why = (p: ReturnType<typeof plan>) => Object.fromEntries(p.suspected.map((s) => [s.allocation.containerId, s.reason]));

describe('planRuntimeReconcile', () => {
  it('frees an allocation older than the grace that two spaced answers both lack, with its evidence; a listed one stays', () => {
    const p = plan([alloc('live', 0), alloc('gone', 100)], [list(500_000, 'live', 'other'), list(510_000, 'live', 'other')]);
    assert.deepEqual(freed(p), ['gone']);
    assert.deepEqual(p.free[0]!.evidence, { containerId: 'gone', lists: [500_000, 510_000], ageMs: 499_900 });
    assert.deepEqual(p.suspected, []);
  });

  it('one answer proves nothing', () => {
    const p = plan([alloc('gone', 0)], [list(500_000, 'a')]);
    assert.deepEqual(freed(p), []);
    assert.deepEqual(why(p), { gone: 'one-answer' });
  });

  it('two answers closer than the spacing prove nothing; the earliest far enough back is used', () => {
    assert.deepEqual(why(plan([alloc('gone', 0)], [list(500_000, 'a'), list(502_000, 'a')])), { gone: 'one-answer' });
    const p = plan([alloc('gone', 0)], [list(490_000, 'a'), list(500_000, 'a'), list(502_000, 'a')]);
    assert.deepEqual(p.free[0]!.evidence.lists, [490_000, 502_000]);
  });

  it('an allocation younger than the grace at the earlier answer is only suspected (its sandbox may still be being created)', () => {
    const p = plan([alloc('new', 500_000 - G + 1)], [list(500_000, 'a'), list(510_000, 'a')]);
    assert.deepEqual(freed(p), []);
    assert.deepEqual(why(p), { new: 'young' });
    assert.deepEqual(freed(plan([alloc('new', 500_000 - G)], [list(500_000, 'a'), list(510_000, 'a')])), ['new']);
  });

  it('listed by the earlier answer but not the latest: not freed (it was there; one answer alone proves nothing)', () => {
    const p = plan([alloc('stopping', 0)], [list(500_000, 'a', 'stopping'), list(510_000, 'a')]);
    assert.deepEqual(freed(p), []);
    assert.deepEqual(why(p), { stopping: 'young' });
  });

  it('an ADD or DEL in flight for the id keeps it', () => {
    const p = plan([alloc('busy', 0)], [list(500_000, 'a'), list(510_000, 'a')], ['busy']);
    assert.deepEqual(freed(p), []);
    assert.deepEqual(why(p), { busy: 'in-flight' });
  });

  it('age: the earlier of the record time and first sight; neither known: never freed', () => {
    assert.deepEqual(why(plan([alloc('u')], [list(500_000, 'a'), list(510_000, 'a')])), { u: 'age-unknown' });
    assert.deepEqual(freed(plan([alloc('s', undefined, 100)], [list(500_000, 'a'), list(510_000, 'a')])), ['s']);
    // A record time in the future (a clock gone wrong) does not hide first sight, nor the reverse.
    assert.deepEqual(freed(plan([alloc('f', 9e12, 100)], [list(500_000, 'a'), list(510_000, 'a')])), ['f']);
    assert.deepEqual(why(plan([alloc('y', 490_000, 9e12)], [list(500_000, 'a'), list(510_000, 'a')])), { y: 'young' });
  });

  it('an empty list while addresses are held frees nothing and says why', () => {
    const p = plan([alloc('gone', 0)], [list(500_000, 'a'), list(510_000)]);
    assert.deepEqual(freed(p), []);
    assert.match(p.refused ?? '', /listed no sandbox while this node holds 1/);
    assert.deepEqual(why(p), { gone: 'refused' });
  });

  it('a list that shrank to less than half (by more than a few) is refused; two consistent small lists are not', () => {
    const many = Array.from({ length: 20 }, (_, k) => `s${k}`);
    const p = plan([alloc('gone', 0)], [list(490_000, ...many), list(500_000, 's1'), list(510_000, 's1')]);
    assert.match(p.refused ?? '', /shrank from 20 to 1/);
    assert.deepEqual(freed(plan([alloc('gone', 0)], [list(500_000, 's1'), list(510_000, 's1')])), ['gone']);
    // Losing three of five is plausible (a few pods deleted).
    assert.deepEqual(freed(plan([alloc('gone', 0)], [list(500_000, 'a', 'b', 'c', 'd', 'e'), list(510_000, 'a', 'b')])), ['gone']);
  });

  it('no lists, no allocations: nothing', () => {
    assert.deepEqual(plan([alloc('a', 0)], []), { free: [], suspected: [] });
    assert.deepEqual(plan([], [list(1), list(10_000)]), { free: [], suspected: [] });
  });
});

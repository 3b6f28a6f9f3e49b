import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type GcAttachment, planPodGc } from './pod-gc.js';

const att = (key: string, o: Partial<GcAttachment> = {}): GcAttachment => ({
  key,
  namespace: 'ns',
  name: key,
  uid: `uid-${key}`,
  sticky: false,
  addedAt: 0,
  goneAt: undefined,
  ...o,
});
const pod = (name: string, uid = `uid-${name}`, namespace = 'ns') => ({ namespace, name, uid });

describe('planPodGc', () => {
  it('keeps the attachments of listed pods, releases a gone non-sticky one at once', () => {
    const plan = planPodGc({ listed: [pod('a')], attachments: [att('a'), att('b')], listedAt: 100, now: 101, stickyForMs: 60_000 });
    assert.deepEqual(plan, { gone: ['b'], back: [], release: ['b'] });
  });

  it('a gone sticky pod: marked gone first, released only once gone for its window', () => {
    const a = att('s', { sticky: true });
    const first = planPodGc({ listed: [], attachments: [a], listedAt: 1000, now: 1001, stickyForMs: 60_000 });
    assert.deepEqual(first, { gone: ['s'], back: [], release: [] });
    const during = planPodGc({ listed: [], attachments: [{ ...a, goneAt: 1000 }], listedAt: 60_999, now: 60_999, stickyForMs: 60_000 });
    assert.deepEqual(during, { gone: [], back: [], release: [] });
    const after = planPodGc({ listed: [], attachments: [{ ...a, goneAt: 1000 }], listedAt: 61_000, now: 61_000, stickyForMs: 60_000 });
    assert.deepEqual(after, { gone: [], back: [], release: ['s'] });
  });

  it('stickyForMs 0: a sticky pod is released at once', () => {
    assert.deepEqual(planPodGc({ listed: [], attachments: [att('s', { sticky: true })], listedAt: 5, now: 5, stickyForMs: 0 }).release, ['s']);
  });

  it('a pod listed again after it was seen gone comes back', () => {
    const plan = planPodGc({ listed: [pod('s')], attachments: [att('s', { sticky: true, goneAt: 10 })], listedAt: 20, now: 20, stickyForMs: 60_000 });
    assert.deepEqual(plan, { gone: [], back: ['s'], release: [] });
  });

  it('a pod of the same name with another uid is a new pod: the old attachment is gone', () => {
    const plan = planPodGc({ listed: [pod('a', 'uid-new')], attachments: [att('a')], listedAt: 10, now: 10, stickyForMs: 1000 });
    assert.deepEqual(plan.release, ['a']);
  });

  it('an unknown uid (no K8S_POD_UID) matches by namespace/name; namespaces are told apart', () => {
    const plan = planPodGc({
      listed: [pod('a', 'x'), pod('b', 'uid-b', 'other')],
      attachments: [att('a', { uid: undefined }), att('b')],
      listedAt: 10,
      now: 10,
      stickyForMs: 0,
    });
    assert.deepEqual(plan.release, ['b']);
  });

  it('never releases an attachment without a pod name, or one added since the list was asked for', () => {
    const plan = planPodGc({
      listed: [],
      attachments: [att('n', { namespace: undefined, name: undefined }), att('late', { addedAt: 10 }), att('old', { addedAt: 9 })],
      listedAt: 10,
      now: 11,
      stickyForMs: 0,
    });
    assert.deepEqual(plan, { gone: ['old'], back: [], release: ['old'] });
  });
});

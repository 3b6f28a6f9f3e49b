/**
 * The history checker on hand-made histories: each violation it exists for is found with its
 * trace, and the histories a correct IPAM may produce (reuse after a DEL, a DEL that failed and
 * was retried, an answer overlapping only an uncertain hold) are not called violations.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type CallRecord, type FinalState, checkHistory, formatViolation } from './history-checker.js';
import { cniHandleId } from '../../src/model/handle-id.js';

let seq = 0;
const call = (kind: 'ADD' | 'DEL', cid: string, start: number, end: number, ok: boolean, addresses: string[] = []): CallRecord => ({
  seq: seq++,
  node: 'n0',
  network: 'net',
  containerId: cid,
  ifname: 'eth0',
  kind,
  start,
  end,
  ok,
  addresses,
  ...(ok ? {} : { error: 'exit 11: datastore unavailable' }),
});
const clean: FinalState = { handles: [], podRecords: [], check: { leaks: [], problems: [] } };
const inPool = (_net: string, a: string): boolean => a.startsWith('10.0.');
const kinds = (r: ReturnType<typeof checkHistory>): string[] => r.violations.map((v) => v.kind);

test("an address reused after its DEL, and one answered while its holder's DEL was in flight, are no violation", () => {
  const r = checkHistory(
    [
      call('ADD', 'a', 0, 10, true, ['10.0.0.1']),
      call('DEL', 'a', 20, 30, true),
      call('ADD', 'b', 25, 40, true, ['10.0.0.1']), // a's DEL started at 20: a's hold was no longer certain
      call('DEL', 'b', 50, 60, true),
    ],
    [],
    [],
    clean,
    inPool,
  );
  assert.deepEqual(kinds(r), []);
  assert.deepEqual(r.calls, { add: 2, addOk: 2, del: 2, delOk: 2 });
  assert.equal(r.holds, 2);
  assert.equal(r.addresses, 1);
});

test("two attachments certainly holding one address at once: double-hold, with both attachments' calls and the faults meanwhile", () => {
  const r = checkHistory(
    [
      call('ADD', 'a', 0, 10, true, ['10.0.0.1']),
      call('ADD', 'b', 12, 15, true, ['10.0.0.2', '10.0.0.1']),
      call('DEL', 'a', 30, 31, true),
      call('DEL', 'b', 40, 41, true),
    ],
    [],
    [
      { kind: 'member-pause', target: 'm1', start: 5, end: 20 },
      { kind: 'node-cut', target: 'n2', start: 100, end: 200 },
    ],
    clean,
    inPool,
  );
  assert.deepEqual(kinds(r), ['double-hold']);
  const v = r.violations[0]!;
  assert.match(v.what, /^10\.0\.0\.1 certainly held by a\/net\/eth0 and b\/net\/eth0 at once/);
  assert.deepEqual(
    v.trace.map((c) => `${c.kind} ${c.containerId}`),
    ['ADD a', 'ADD b', 'DEL a', 'DEL b'],
  );
  assert.deepEqual(
    v.faults.map((f) => f.kind),
    ['member-pause'],
  );
  assert.match(formatViolation(v), /#\d+ \S+ \+3ms ADD n0 net b eth0 → ok 10\.0\.0\.2,10\.0\.0\.1/);
});

test("a failed DEL ends the certain hold: an answer after it is no violation, but the attachment must be DEL'd successfully at last", () => {
  const history = [
    call('ADD', 'a', 0, 10, true, ['10.0.0.1']),
    call('DEL', 'a', 20, 25, false), // may have freed it
    call('ADD', 'b', 30, 35, true, ['10.0.0.1']),
    call('DEL', 'b', 40, 45, true),
  ];
  assert.deepEqual(kinds(checkHistory(history, [], [], clean, inPool)), ['unreleased']);
  assert.deepEqual(kinds(checkHistory([...history, call('DEL', 'a', 50, 55, true)], [], [], clean, inPool)), []);
});

test('a release podipam made on its own ends the certain hold like a DEL', () => {
  const history = [
    call('ADD', 'a', 0, 10, true, ['10.0.0.1']),
    call('ADD', 'b', 30, 35, true, ['10.0.0.1']),
    call('DEL', 'b', 40, 45, true),
    call('DEL', 'a', 50, 55, true),
  ];
  assert.deepEqual(kinds(checkHistory(history, [], [], clean, inPool)), ['double-hold']);
  assert.deepEqual(
    kinds(checkHistory(history, [{ containerId: 'a', network: 'net', ifname: 'eth0', start: 20, end: 22, why: 'cluster-gc' }], [], clean, inPool)),
    [],
  );
});

test("a failed ADD holds nothing certain; never DEL'd it is unreleased", () => {
  assert.deepEqual(
    kinds(
      checkHistory(
        [call('ADD', 'a', 0, 10, false), call('DEL', 'a', 11, 12, true), call('ADD', 'b', 5, 6, true, ['10.0.0.1']), call('DEL', 'b', 7, 8, true)],
        [],
        [],
        clean,
        inPool,
      ),
    ),
    [],
  );
  assert.deepEqual(kinds(checkHistory([call('ADD', 'a', 0, 10, false)], [], [], clean, inPool)), ['unreleased']);
});

test("bad answers: no address, one outside the network's pools, one twice", () => {
  const r = checkHistory(
    [
      call('ADD', 'a', 0, 1, true, []),
      call('DEL', 'a', 2, 3, true),
      call('ADD', 'b', 0, 1, true, ['192.168.0.1', '10.0.0.9', '10.0.0.9']),
      call('DEL', 'b', 2, 3, true),
    ],
    [],
    [],
    clean,
    inPool,
  );
  assert.deepEqual(kinds(r).sort(), ['bad-answer', 'bad-answer', 'bad-answer']);
});

test('at the end: a pod handle left, a run address outside the warm stock, and ipam check findings are violations; warm stock is not', () => {
  const history = [
    call('ADD', 'a', 0, 1, true, ['10.0.0.1']),
    call('DEL', 'a', 2, 3, true),
    call('ADD', 'b', 0, 1, true, ['10.0.0.2']),
    call('DEL', 'b', 2, 3, true),
  ];
  assert.deepEqual(
    kinds(
      checkHistory(
        history,
        [],
        [],
        { handles: [{ handle: 'warm:n0', addresses: ['10.0.0.1', '10.0.0.2'], warmStock: true }], podRecords: [], check: { leaks: [], problems: [] } },
        inPool,
      ),
    ),
    [],
  );
  const r = checkHistory(
    history,
    [],
    [],
    {
      handles: [{ handle: 'net.a.eth0', addresses: ['10.0.0.2'], warmStock: false }],
      podRecords: ['podrecords/n0/x'],
      check: { leaks: ['10.0.0.7'], problems: [] },
    },
    inPool,
  );
  assert.deepEqual(kinds(r), ['left-held', 'left-held', 'left-held', 'check-disagrees']);
  // A handle the checker can name the attachment of shows that attachment's calls.
  const named = checkHistory(
    history,
    [],
    [],
    { handles: [{ handle: cniHandleId('net', 'a', 'eth0'), addresses: ['10.0.0.1'], warmStock: false }], podRecords: [], check: { leaks: [], problems: [] } },
    inPool,
  );
  assert.deepEqual(
    named.violations.map((v) => v.trace.map((c) => `${c.kind} ${c.containerId}`)),
    [
      ['ADD a', 'DEL a'],
      ['ADD a', 'DEL a'],
    ],
  );
});

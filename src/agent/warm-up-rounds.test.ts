/**
 * The warm-up's arithmetic (warm-up-rounds.ts): how many rounds it aims at, when it runs another,
 * which warm-up counts as completed (then the agent stops V8 optimising), and how many calls its
 * rounds make. The warm-up itself runs through the agent in test/e2e/agent-warm-up.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EPOCH_SHARE,
  FRESH_DATA_ROUNDS,
  FRESH_EPOCHS,
  MIN_ROUNDS,
  WARM_UP_BUDGET_MS,
  callsOfRounds,
  delsTwice,
  epochOf,
  targetRounds,
  wantsAnotherRound,
  warmUpCompleted,
} from './warm-up-rounds.js';

test('a warm-up aims at 200 rounds in the default 3 s, in proportion to its budget, 8 to 1,000', () => {
  assert.equal(targetRounds(WARM_UP_BUDGET_MS), 200);
  assert.equal(targetRounds(300), 20);
  assert.equal(targetRounds(1), 8);
  assert.equal(targetRounds(60_000), 1000);
});

test('within its budget a warm-up runs rounds; past it, only while short of its target, up to 4 times the budget', () => {
  assert.equal(wantsAnotherRound(0, 0, 3000), true);
  assert.equal(wantsAnotherRound(500, 2999, 3000), true, 'within the budget');
  assert.equal(wantsAnotherRound(500, 3000, 3000), false, 'its target done: the budget ends it');
  assert.equal(wantsAnotherRound(199, 3000, 3000), true, 'short of its target: on past the budget');
  assert.equal(wantsAnotherRound(199, 11_999, 3000), true);
  assert.equal(wantsAnotherRound(199, 12_000, 3000), false, 'never past 4 times the budget');
  assert.equal(wantsAnotherRound(200, 3500, 3000), false);
  assert.equal(wantsAnotherRound(7, 60_000, 3000), true, 'at least 8 rounds, however slow');
  assert.equal(wantsAnotherRound(1000, 0, 3000), false, 'at most 1,000');
  assert.equal(wantsAnotherRound(10, 89_999, 60_000), true, 'a long budget: at most 30 s past it');
  assert.equal(wantsAnotherRound(10, 90_000, 60_000), false);
});

test('a warm-up is completed without an error and with its target rounds; a short one is not', () => {
  const w = { rounds: 200, target: 200 };
  assert.equal(warmUpCompleted(w), true);
  assert.equal(warmUpCompleted({ ...w, rounds: 199 }), false, 'short of its target (a busy node)');
  assert.equal(warmUpCompleted({ ...w, error: 'boom' }), false);
  assert.equal(warmUpCompleted(undefined), false);
});

test("a round's calls: an ADD and a DEL per network, a second DEL every other round, and 4 ADDs and 4 DELs after every burst round", () => {
  assert.deepEqual([0, 1, 2, 3].map(delsTwice), [true, false, true, false]);
  assert.equal(callsOfRounds(0, 3), 0);
  assert.equal(callsOfRounds(1, 3), 9, 'round 0: ADD, DEL, DEL on each of 3 networks');
  // round 1: another network's burst; round 3: the cluster's
  assert.equal(callsOfRounds(2, 3), 9 + 6 + 8);
  assert.equal(callsOfRounds(4, 3), 2 * 9 + 2 * 6 + 16);
  assert.equal(callsOfRounds(8, 4), 4 * 12 + 4 * 8 + 24, 'bursts after rounds 1, 3 and 7');
});

test('epochOf: a new epoch every FRESH_DATA_ROUNDS rounds, FRESH_EPOCHS times at most, in the first EPOCH_SHARE of the target rounds', () => {
  const target = targetRounds(WARM_UP_BUDGET_MS);
  const epochs = Array.from({ length: (FRESH_EPOCHS + 2) * FRESH_DATA_ROUNDS }, (_, r) => epochOf(r, target));
  assert.deepEqual(epochs.slice(0, FRESH_DATA_ROUNDS), Array(FRESH_DATA_ROUNDS).fill(0));
  assert.equal(epochs[FRESH_DATA_ROUNDS], 1);
  assert.equal(Math.max(...epochs), FRESH_EPOCHS, 'the default budget has them all');
  assert.equal(epochs.indexOf(FRESH_EPOCHS), FRESH_EPOCHS * FRESH_DATA_ROUNDS);
  assert.ok(FRESH_EPOCHS * FRESH_DATA_ROUNDS <= EPOCH_SHARE * target, 'all within the first share of the target');
  assert.ok(
    epochs.every((e, r) => r === 0 || e === epochs[r - 1] || e === epochs[r - 1]! + 1),
    'one step at a time',
  );
  assert.equal(epochOf(10_000, target), FRESH_EPOCHS);
  // A short budget: fewer epochs, all within its first share.
  const short = targetRounds(1000);
  const last = epochOf(10_000, short);
  assert.ok(last < FRESH_EPOCHS && last * FRESH_DATA_ROUNDS <= EPOCH_SHARE * short, `1 s: ${last} epochs for ${short} rounds`);
  assert.equal(epochOf(10_000, MIN_ROUNDS), 0, 'the minimum: one data directory and datastore');
});

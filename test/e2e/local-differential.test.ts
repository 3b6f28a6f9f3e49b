/**
 * podipam's `local` back end against the reference /usr/lib/cni/host-local (Debian 1.1.1), on
 * randomized but seeded ADD/DEL/CHECK sequences: the same calls go to both plugins, each with
 * its own dataDir, and after every call the outputs and the directories must be identical —
 * stdout bytes for successes, the message for failures (host-local's code 999 becomes a spec
 * code in podipam; any other code must match), and file names, bytes and modes on disk.
 * Re-run a failure with PODIPAM_SEED=<printed seed>.
 */
import { test } from 'node:test';
import { PER_POD, SEED, sequencesAgree, tableAgrees, takeTurns } from '../helpers/differential.js';

test(`podipam and host-local agree on random ADD/DEL/CHECK sequences (seed ${SEED})`, (t) => sequencesAgree(PER_POD, t));

test(`podipam and host-local take turns on ONE directory without losing a reservation (seed ${SEED})`, (t) => takeTurns(PER_POD, t));

test('reference table cases and bad input: same success/failure as host-local, podipam never says 999', () => tableAgrees(PER_POD));

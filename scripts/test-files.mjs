// Runs test files with node:test's run(), three at a time, starting them in the order given:
// `node --test FILE…` sorts its files by path whatever order they are named in (Node 20), so the
// order scripts/test.mjs chooses (the longest first) would be lost. The files run each in its own
// process, as under `node --test`.
// Usage (scripts/test.mjs runs it): node scripts/test-files.mjs [--guard URL] COUNT_FILE FILE…
// Prints node:test's spec output to stdout and writes scripts/count-reporter.mjs's lines to
// COUNT_FILE. --guard URL is imported into every test file's process (NODE_OPTIONS --import),
// not into this one: the runner here must start processes. Exits 1 when a test failed.
// PODIPAM_TEST_LANES (default 3) sets how many files run at once. Three on the 2-core CI machine:
// most long files wait (on etcd, containerd, a browser, their own sleeps) as much as they work, a
// file keeping ~0.6 of a core busy; the clean-clone suite took 1,099 s of tests with 3 (0 failed).
import { createWriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import countReporter from './count-reporter.mjs';

const args = process.argv.slice(2);
if (args[0] === '--guard') {
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, `--import=${args[1]}`].filter((o) => o !== undefined && o !== '').join(' ');
  args.splice(0, 2);
}
const [countFile, ...files] = args;
if (countFile === undefined || files.length === 0) {
  console.error('usage: node scripts/test-files.mjs [--guard URL] COUNT_FILE FILE…');
  process.exit(2);
}

const lanes = Number(process.env.PODIPAM_TEST_LANES ?? 3);
if (!Number.isInteger(lanes) || lanes < 1) {
  console.error(`invalid PODIPAM_TEST_LANES ${JSON.stringify(process.env.PODIPAM_TEST_LANES)}: expected a whole number of files at once, 1 or more`);
  process.exit(2);
}

const toSpec = new PassThrough({ objectMode: true });
const toCount = new PassThrough({ objectMode: true });
const specDone = new Promise((done, fail) => toSpec.pipe(new spec()).on('error', fail).on('end', done).pipe(process.stdout, { end: false }));
const countDone = pipeline(toCount, countReporter, createWriteStream(countFile));
let failed = false;
for await (const event of run({ files: files.map((f) => resolve(f)), concurrency: lanes })) {
  if (event.type === 'test:fail') failed = true;
  toSpec.write(event);
  toCount.write(event);
}
toSpec.end();
toCount.end();
await Promise.all([specDone, countDone]);
process.exitCode = failed ? 1 : 0;

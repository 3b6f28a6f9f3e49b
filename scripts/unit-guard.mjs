// Loaded with --import into every test file `npm run test:unit` runs (scripts/test.mjs --unit):
// a unit test runs in this process and its worker threads, with files and SQLite, and starts no
// program. Any child_process call (spawn, spawnSync, exec, execSync, execFile, execFileSync,
// fork) throws instead, naming the program, so a test that starts etcd, containerd, `ip netns`,
// Chromium, an image build or even `node` fails `test:unit` at once rather than slowing it down
// unnoticed. Such a test belongs in test/ (see HACKING.md, "Fast tests").
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

const NAMES = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'];

export class UnitTestSpawnError extends Error {
  constructor(fn, program) {
    super(
      `a unit test must not start a program: child_process.${fn}(${JSON.stringify(program)}) was called under npm run test:unit; ` +
        'move the test to test/ (where tests may start processes) or test the code without the process',
    );
    this.name = 'UnitTestSpawnError';
  }
}

for (const name of NAMES) {
  childProcess[name] = (program) => {
    throw new UnitTestSpawnError(name, program);
  };
}
// ESM named imports of a builtin (`import { spawn } from 'node:child_process'`) are bound to
// copies of its exports: this makes them see the replacements too.
syncBuiltinESMExports();

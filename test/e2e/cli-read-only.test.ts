/**
 * Read-only commands never create a datastore: `ipam show`, `ipam check`, `ipam config`
 * (without a change), `pool list`, `node list`, `import host-local --dry-run` and
 * `import whereabouts --dry-run` on a SQLite
 * file that does not exist fail naming it (exit 1) and leave neither the file nor its
 * directory behind — also for the default store in the data directory. Writes still create it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN, runCliSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { whereaboutsList } from '../helpers/whereabouts-fixture.js';

const READS: readonly (readonly string[])[] = [
  ['ipam', 'show'],
  ['ipam', 'show', '--blocks', '--json'],
  ['ipam', 'check'],
  ['ipam', 'config'],
  ['pool', 'list'],
  ['node', 'list', '--json'],
];

test('read-only commands on a missing SQLite store fail naming it and create nothing; a write creates it', { timeout: 120_000 }, () => {
  const dir = makeTempDir('cli-read-only');
  try {
    const file = join(dir.path, 'nonexistent', 'dir', 'x.db');
    const url = `sqlite:${file}`;
    const hl = join(dir.path, 'hl', 'net');
    mkdirSync(hl, { recursive: true });
    writeFileSync(join(hl, '10.90.0.5'), 'c1\r\neth0');
    const wb = join(dir.path, 'wb.json');
    writeFileSync(
      wb,
      JSON.stringify(whereaboutsList([{ range: '10.91.0.0/24', networkName: 'wbnet' }], [{ containerId: 'c1', podref: 'a/b', ips: ['10.91.0.4'] }])),
    );
    for (const args of [...READS, ['import', 'host-local', hl, '--node', 'node-a', '--dry-run'], ['import', 'whereabouts', wb, '--dry-run']]) {
      const r = runCliSync(url, args);
      assert.equal(r.code, 1, `${args.join(' ')}: exit ${r.code}, stdout ${r.stdout}, stderr ${r.stderr}`);
      assert.match(r.stderr, /^podipam: /, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stderr.includes(file), `${args.join(' ')}: the message names the file: ${r.stderr}`);
      assert.match(r.stderr, /does not exist/, `${args.join(' ')}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /, `${args.join(' ')}: a stack trace`);
      assert.equal(r.stdout, '', `${args.join(' ')}: nothing on stdout (no empty table)`);
      assert.equal(existsSync(join(dir.path, 'nonexistent')), false, `${args.join(' ')} created ${join(dir.path, 'nonexistent')}`);
    }
    // A write creates the store (and its directory) as before; then every read works on it.
    const created = runCliSync(url, ['pool', 'create', 'v4', '--cidr', '10.90.0.0/24']);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(existsSync(file), true);
    for (const args of READS) {
      const r = runCliSync(url, args);
      assert.equal(r.code, 0, `${args.join(' ')} on the created store: ${r.stderr}`);
    }
    assert.match(runCliSync(url, ['ipam', 'show']).stdout, /^v4\s+10\.90\.0\.0\/24\s/m);
  } finally {
    dir.remove();
  }
});

test('ipam show without --datastore does not create podipam.db in the data directory', { timeout: 60_000 }, () => {
  const dir = makeTempDir('cli-read-only-default');
  try {
    const dataDir = join(dir.path, 'data');
    const env: NodeJS.ProcessEnv = { ...process.env, PODIPAM_DATA_DIR: dataDir };
    delete env.PODIPAM_DATASTORE;
    const r = spawnSync(PODIPAM_BIN, ['ipam', 'show'], { encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(r.status, 1, `exit ${r.status}, stdout ${r.stdout}, stderr ${r.stderr}`);
    assert.ok(r.stderr.includes(join(dataDir, 'podipam.db')), r.stderr);
    assert.equal(existsSync(dataDir), false, 'the data directory was created');
  } finally {
    dir.remove();
  }
});

/**
 * `import host-local --dry-run` runs the very validation the import runs (the same assignment
 * on a copy of the store): an address outside every pool, or held by another handle, is
 * "failed" in the dry run exactly as the import then refuses it — and the dry run writes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

interface Report {
  adopted: number;
  failed: number;
  results: { ip: string; handle: string; outcome: string; error?: string }[];
}

test('import host-local --dry-run refuses what the import refuses, and writes nothing', { timeout: 90_000 }, () => {
  const tmp = makeTempDir('import-dry-run');
  const db = `sqlite:${join(tmp.path, 'podipam.db')}`;
  const net = join(tmp.path, 'networks', 'hl-net');
  try {
    mkdirSync(net, { recursive: true });
    writeFileSync(join(net, '10.90.0.5'), 'c1\r\neth0');
    writeFileSync(join(net, '10.77.0.9'), 'c2\r\neth0'); // in no pool
    assert.equal(runCliSync(db, ['pool', 'create', 'v4', '--cidr', '10.90.0.0/24']).code, 0);
    const args = ['import', 'host-local', net, '--node', 'node-a', '--json'];

    const dry = runCliSync(db, [...args, '--dry-run']);
    assert.equal(dry.code, 1, `dry run: exit ${dry.code}, ${dry.stderr}`);
    assert.match(dry.stderr, /^podipam: .*could not be adopted/m);
    const d = JSON.parse(dry.stdout) as Report;
    const byIp = new Map(d.results.map((r) => [r.ip, r]));
    assert.equal(byIp.get('10.90.0.5')?.outcome, 'dry-run', dry.stdout);
    assert.equal(byIp.get('10.77.0.9')?.outcome, 'failed', dry.stdout);
    // Nothing written by the dry run.
    const shown = JSON.parse(runCliSync(db, ['ipam', 'show', '--json']).stdout) as { items: { allocated: number }[] };
    assert.deepEqual(
      shown.items.map((p) => p.allocated),
      [0],
    );

    // The import refuses the same address with the same reason.
    const real = runCliSync(db, args);
    assert.equal(real.code, 1, real.stderr);
    const r = JSON.parse(real.stdout) as Report;
    const refused = r.results.find((x) => x.ip === '10.77.0.9');
    assert.equal(refused?.outcome, 'failed');
    assert.equal(refused?.error, byIp.get('10.77.0.9')?.error, "the dry run gives the import's reason");
    assert.equal(r.results.find((x) => x.ip === '10.90.0.5')?.outcome, 'adopted');

    // Another container's file now names an address c1 holds: refused in the dry run as in the import.
    writeFileSync(join(net, '10.90.0.5'), 'c9\r\neth0');
    const again = JSON.parse(runCliSync(db, [...args, '--dry-run']).stdout) as Report;
    const taken = again.results.find((x) => x.ip === '10.90.0.5');
    assert.equal(taken?.outcome, 'failed', JSON.stringify(again));
    const realAgain = JSON.parse(runCliSync(db, args).stdout) as Report;
    assert.equal(realAgain.results.find((x) => x.ip === '10.90.0.5')?.error, taken?.error);
  } finally {
    tmp.remove();
  }
});

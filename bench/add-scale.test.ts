import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Row, cases, measureCase, tables } from './add-scale.js';

test('add-scale smoke: every dimension measures a small row and prints its table', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-add-scale-test-'));
  try {
    const small = cases(1000).filter(
      (c) => c.dimension === 'pool size' || c.label === '20 blocks' || c.label === '1000 blocks' || c.label === '10 nodes' || c.label === 'owns 20 blocks',
    );
    assert.deepEqual([...new Set(small.map((c) => c.dimension))], ['pool size', 'blocks', 'nodes', 'own blocks', 'borrowing at the cap']);
    const rows: Row[] = [];
    for (const c of small) rows.push(await measureCase(c, dir, 4));
    // the fillers really hold the blocks the row names
    const held = (label: string): number => rows.find((r) => r.case.label === label)?.blocks ?? 0;
    assert.ok(held('1000 blocks') >= 10 * held('20 blocks') && held('20 blocks') > 0, `blocks held: ${held('20 blocks')}, ${held('1000 blocks')}`);
    assert.equal(rows.find((r) => r.case.label === 'IPv6 /64')?.blocks, 3);
    for (const r of rows) assert.ok(r.firstMs > 0 && r.p50Ms > 0 && r.roundTripsPerAdd > 0, JSON.stringify(r));
    // at its cap the probe node borrows: it reads a page of the others' blocks, every ADD
    const borrow = rows.find((r) => r.case.dimension === 'borrowing at the cap')!;
    assert.ok(borrow.listedPerAdd >= 1, JSON.stringify(borrow));
    const out = tables(rows);
    assert.equal(out.filter((l) => l.startsWith('ADD by ')).length, 5);
    assert.ok(
      out.some((l) => l.startsWith('| IPv4 /24 | 3 |')),
      out.join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

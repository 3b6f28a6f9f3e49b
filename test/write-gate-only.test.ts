/**
 * The write gate is the only way to the datastore's write API for the keys of blocks, pools,
 * affinities, handles, reservations, ip-sets and `config` (src/cluster/gate/write-gate.ts), read
 * from the TypeScript sources: every call or reference of `txn` on a store outside src/store (the
 * engines themselves, their copy and their whole-store restore) is in the gate, or in a file that
 * imports nothing of src/cluster and names none of those prefixes (the node-CIDR controller, whose
 * keys are its own).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';
import { specifiers } from './helpers/specifiers.js';
import { AFFINITY_PREFIX, BLOCK_PREFIX, CONFIG_KEY, HANDLE_PREFIX, IPSET_PREFIX, POOL_PREFIX, RESERVATION_PREFIX } from '../src/cluster/records/keys.js';

const GATE = 'src/cluster/gate/write-gate.ts';
const GUARDED = [POOL_PREFIX, BLOCK_PREFIX, AFFINITY_PREFIX, HANDLE_PREFIX, RESERVATION_PREFIX, IPSET_PREFIX];

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

/** Lines of `text` that call or take `txn` of something (`x.txn(`, `x.txn`, `['txn']`, `{ txn }`), comments aside. */
export function txnUses(text: string): number[] {
  const out: number[] = [];
  text.split('\n').forEach((line, i) => {
    const code = line.replace(/\/\/.*$/, '');
    if (/^\s*\*/.test(code)) return;
    if (/\.txn\b|\[\s*['"]txn['"]\s*\]|\{\s*[^}]*\btxn\b[^}]*\}\s*=\s*\w*store/i.test(code)) out.push(i + 1);
  });
  return out;
}

test('txnUses finds calls and references, not words in comments', () => {
  assert.deepEqual(
    txnUses('const r = await ctx.store.txn(a, b);\n// store.txn( in a comment\n * txn in a doc\nconst f = store.txn;\nconst g = s["txn"];'),
    [1, 4, 5],
  );
});

test('only the write gate writes the keys of blocks, pools and holders', () => {
  const files = walk(join(REPO_ROOT, 'src'), []);
  assert.ok(files.length > 200, `only ${files.length} source files: wrong root?`);
  const offenders: string[] = [];
  const gateUses: number[] = [];
  for (const file of files) {
    const rel = relative(REPO_ROOT, file).split(sep).join('/');
    if (rel.startsWith('src/store/')) continue;
    const text = readFileSync(file, 'utf8');
    const uses = txnUses(text);
    if (uses.length === 0) continue;
    if (rel === GATE) {
      gateUses.push(...uses);
      continue;
    }
    const cluster = specifiers(text).filter((s) => /(^|\/)cluster\//.test(s) || (rel.startsWith('src/cluster/') && s.startsWith('./')));
    const named = [...GUARDED, `'${CONFIG_KEY}'`].filter((p) => text.includes(`'${p}`) || text.includes(p === `'${CONFIG_KEY}'` ? p : `"${p}`));
    if (rel.startsWith('src/cluster/') || rel.startsWith('src/import/') || cluster.length > 0 || named.length > 0) {
      offenders.push(
        `${rel}:${uses.join(',')} writes the store outside the gate${cluster.length ? ` (imports ${cluster.join(', ')})` : ''}${named.length ? ` (names ${named.join(', ')})` : ''}`,
      );
    }
  }
  assert.deepEqual(offenders, []);
  assert.equal(gateUses.length, 1, `the gate should send exactly one txn: lines ${gateUses.join(', ')}`);
});

/**
 * The services know nothing of CNI: no file under src/local, src/cluster, src/controller,
 * src/server (nor the layers below them: src/model, src/store, src/alloc, src/ip, src/util)
 * imports from src/cni (the protocol) or src/plugin (the plugin edge), statically or lazily.
 * Read from the TypeScript sources, so a test file counts too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';

const SERVICES = ['local', 'cluster', 'controller', 'server', 'warm', 'model', 'store', 'alloc', 'ip', 'util'];
const EDGES = ['cni', 'plugin'];

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every relative module specifier of `text`: `from '…'`, `import '…'`, `import('…')`, `typeof import('…')`. */
export function specifiers(text: string): string[] {
  return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
}

test('specifiers finds static, dynamic and type imports', () => {
  const src = "import { a } from '../cni/x.js';\nimport type { B } from \"./b.js\";\nconst m = await import('../plugin/y.js');\ntype T = typeof import('../z.js');\nimport '../side.js';";
  assert.deepEqual(specifiers(src), ['../cni/x.js', './b.js', '../plugin/y.js', '../z.js', '../side.js']);
});

test('no service imports the CNI protocol (src/cni) or the plugin edge (src/plugin)', () => {
  const srcRoot = join(REPO_ROOT, 'src');
  const offenders: string[] = [];
  let files = 0;
  for (const part of SERVICES) {
    for (const file of walk(join(srcRoot, part), [])) {
      files++;
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        const target = relative(srcRoot, resolve(dirname(file), spec)).split(sep)[0]!;
        if (EDGES.includes(target)) offenders.push(`${relative(REPO_ROOT, file)} imports ${spec}`);
      }
    }
  }
  assert.ok(files > 100, `only ${files} source files under ${SERVICES.join(', ')}: wrong root?`);
  assert.deepEqual(offenders, []);
});

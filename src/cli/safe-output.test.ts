import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { guardOutput } from './safe-output.js';
import { formatTable } from './output.js';

test('a guarded stream never carries a raw control character but newline and tab', async () => {
  const s = new PassThrough();
  const chunks: string[] = [];
  s.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  guardOutput(s);
  guardOutput(s);
  s.write('pod shop/web\u001b]0;owned\u0007\tx\u009b\n');
  s.write(`${JSON.stringify({ pod: 'a\u0085b' })}\n`);
  s.end();
  await new Promise((r) => s.on('end', r));
  const out = chunks.join('');
  assert.equal(out, 'pod shop/web\\u001b]0;owned\\u0007\tx\\u009b\n{"pod":"a\\u0085b"}\n');
  assert.deepEqual(JSON.parse(out.split('\n')[1]!), { pod: 'a\u0085b' }, 'JSON stays JSON, with the same value');
});

test('table cells escape control characters, so columns stay aligned', () => {
  const out = formatTable(
    [{ pod: 'web\u001b[2J' }, { pod: 'db' }],
    [
      { header: 'POD', value: (r) => r.pod },
      { header: 'N', value: () => 1 },
    ],
  );
  assert.equal(out, ['POD           N', 'web\\u001b[2J  1', 'db            1', ''].join('\n'));
});

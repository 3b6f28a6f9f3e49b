/**
 * The dashboard as the build ships it: the page names exactly the hashed assets of the
 * manifest, served on a real loopback socket with their cache headers (the page `no-cache` +
 * ETag and its CSP, assets `immutable`), 304 on If-None-Match; a missing build fails loudly.
 * And the lint-ish checks of the browser code: its tsconfig stays strict, the node tsconfig
 * leaves it alone, and nothing in it writes HTML from strings or runs code the CSP would block.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApiDeps } from './api-deps.js';
import { DASHBOARD_DIR, etagMatches, loadDashboard } from './dashboard-assets.js';
import { createHttpServer, type HandlerSpec } from '../http/http-server.js';
import { hostPolicy } from '../http/request-guard.js';
import { Router } from '../http/router.js';
import { addStaticRoutes } from './routes-static.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const SRC = join(REPO, 'src/server/dashboard');

describe('the built dashboard', () => {
  it('the page names exactly the manifest assets, hashed names, one script and one stylesheet; ETags hash the bytes', () => {
    const d = loadDashboard();
    const names = [...d.assets.keys()].sort();
    assert.equal(names.length, 2);
    assert.match(names[0]!, /^app-[A-Z0-9]{8}\.js$/);
    assert.match(names[1]!, /^style-[A-Z0-9]{8}\.css$/);
    const html = d.page.body.toString('utf8');
    const refs = [...html.matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((m) => m[1]).sort();
    assert.deepEqual(refs, names);
    assert.equal((html.match(/<script\b/g) ?? []).length, 1, 'one script element, no inline script');
    assert.doesNotMatch(html, /<style\b|\sstyle=|\son[a-z]+=/i, 'no inline style or handler: the CSP forbids them');
    assert.doesNotMatch(html, /<!--/, 'comments stripped');
    for (const f of [d.page, ...d.assets.values()]) assert.equal(f.etag, `"${createHash('sha256').update(f.body).digest('base64url').slice(0, 27)}"`);
    assert.equal(d.assets.get(names[0]!)!.contentType, 'text/javascript; charset=utf-8');
    assert.equal(d.assets.get(names[1]!)!.contentType, 'text/css; charset=utf-8');
    assert.deepEqual(readdirSync(DASHBOARD_DIR).sort(), ['index.html', 'manifest.json', ...names].sort(), 'nothing stale beside the bundle');
  });

  it('a missing or malformed build fails with the path and the fix', () => {
    const dir = mkdtempSync(join(tmpdir(), 'podipam-dash-'));
    try {
      assert.throws(
        () => loadDashboard(dir),
        (e: Error) => e.message.includes(join(dir, 'manifest.json')) && /npm run build/.test(e.message),
      );
      writeFileSync(join(dir, 'manifest.json'), '{"index": "index.html", "assets": ["../etc/passwd"]}');
      assert.throws(() => loadDashboard(dir), /must be \{"index": "index.html"/);
      writeFileSync(join(dir, 'manifest.json'), '{"index": "index.html", "assets": ["app-X.js"]}');
      assert.throws(
        () => loadDashboard(dir),
        (e: Error) => e.message.includes(join(dir, 'app-X.js')),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('etagMatches: exact, weak, lists, *', () => {
    assert.equal(etagMatches(undefined, '"a"'), false);
    assert.equal(etagMatches('"a"', '"a"'), true);
    assert.equal(etagMatches('W/"a"', '"a"'), true);
    assert.equal(etagMatches('"b", "a"', '"a"'), true);
    assert.equal(etagMatches('*', '"a"'), true);
    assert.equal(etagMatches('"b"', '"a"'), false);
    assert.equal(etagMatches('a', '"a"'), false);
  });
});

describe('dashboard routes on a loopback socket', () => {
  let server: Server;
  let base: string;
  const d = loadDashboard();
  before(async () => {
    const r = new Router<HandlerSpec>();
    addStaticRoutes(r, {} as ApiDeps, d);
    server = createHttpServer({ router: r, tokens: { install: 'install-0123456789abcdef' }, hostPolicy: hostPolicy('127.0.0.1', []) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('the page: no-cache, ETag, the CSP and framing headers; 304 on If-None-Match, 200 on a stale tag', async () => {
    for (const path of ['/', '/index.html']) {
      const r = await fetch(base + path);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), d.page.body.toString('utf8'));
      assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(r.headers.get('cache-control'), 'no-cache');
      assert.equal(r.headers.get('etag'), d.page.etag);
      assert.equal(
        r.headers.get('content-security-policy'),
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'",
      );
      assert.equal(r.headers.get('x-frame-options'), 'DENY');
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    }
    const again = await fetch(`${base}/`, { headers: { 'if-none-match': d.page.etag } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), '');
    assert.equal(again.headers.get('etag'), d.page.etag);
    assert.equal(again.headers.get('cache-control'), 'no-cache');
    assert.equal((await fetch(`${base}/`, { headers: { 'if-none-match': '"stale"' } })).status, 200);
  });

  it('assets: immutable for a year, ETag, 304; an unknown name 404s', async () => {
    for (const [name, f] of d.assets) {
      const r = await fetch(`${base}/assets/${name}`);
      assert.equal(r.status, 200);
      assert.deepEqual(Buffer.from(await r.arrayBuffer()), f.body);
      assert.equal(r.headers.get('content-type'), f.contentType);
      assert.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(r.headers.get('etag'), f.etag);
      assert.equal(r.headers.get('content-length'), String(f.body.length));
      const again = await fetch(`${base}/assets/${name}`, { headers: { 'if-none-match': `W/${f.etag}` } });
      assert.equal(again.status, 304);
    }
    for (const path of ['/assets/app.js', '/assets/style.css', '/assets/app-00000000.js']) {
      const r = await fetch(base + path);
      assert.equal(r.status, 404, path);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'not_found');
    }
  });
});

describe('the browser code (lint-ish)', () => {
  it('its tsconfig is strict, DOM-typed, no emit; the node tsconfig excludes it', () => {
    // JSON with a "//" key only: no comments to strip.
    const browser = JSON.parse(readFileSync(join(SRC, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown>; include: string[] };
    const o = browser.compilerOptions;
    for (const flag of [
      'strict',
      'noEmit',
      'exactOptionalPropertyTypes',
      'noUncheckedIndexedAccess',
      'noImplicitReturns',
      'noUnusedLocals',
      'noUnusedParameters',
      'noImplicitOverride',
      'noFallthroughCasesInSwitch',
      'isolatedModules',
    ]) {
      assert.equal(o[flag], true, `src/server/dashboard/tsconfig.json: ${flag} must be true`);
    }
    assert.equal(o.skipLibCheck, false);
    assert.ok((o.lib as string[]).includes('DOM'));
    assert.deepEqual(o.types, [], 'no @types/node in browser code');
    const node = JSON.parse(readFileSync(join(REPO, 'tsconfig.json'), 'utf8')) as { exclude?: string[] };
    assert.ok(node.exclude?.includes('src/server/dashboard/**'), 'tsconfig.json must exclude src/server/dashboard/**');
    const build = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: { build: string } }).scripts.build;
    assert.match(build, /tsc -p src\/server\/dashboard\/tsconfig\.json && .*node scripts\/bundle-dashboard\.mjs/);
  });

  it('no HTML from strings, no eval, no inline styles or handlers (the CSP would block them), no node imports', () => {
    const files = readdirSync(SRC).filter((f) => f.endsWith('.ts'));
    assert.ok(files.includes('app.ts'));
    for (const f of files) {
      const text = readFileSync(join(SRC, f), 'utf8');
      // Outside its folder the page may import only pure rules it shares with the CLI (src/util/), which import nothing.
      for (const bad of [
        /\.innerHTML\b/,
        /\.outerHTML\b/,
        /insertAdjacentHTML/,
        /document\.write/,
        /\beval\(/,
        /new Function\(/,
        /setAttribute\(\s*'(style|on[a-z]+)'/,
        /from '(node:|\.\.\/(?!\.\.\/util\/))/,
      ]) {
        assert.doesNotMatch(text, bad, `src/server/dashboard/${f}`);
      }
      for (const [, shared] of text.matchAll(/from '\.\.\/\.\.\/util\/([a-z-]+)\.js'/g)) {
        assert.doesNotMatch(
          readFileSync(join(SRC, '..', '..', 'util', `${shared}.ts`), 'utf8'),
          /^import /m,
          `src/util/${shared}.ts, shared with the page, imports nothing`,
        );
      }
    }
  });
});

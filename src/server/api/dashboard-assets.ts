/**
 * The dashboard as `npm run build` leaves it in dist/src/server/dashboard/ (written by
 * scripts/bundle-dashboard.mjs from src/server/dashboard/): `manifest.json` names the page and
 * its content-hashed assets. Read once when the server starts; each file carries a strong ETag
 * (a hash of its bytes) so a browser revalidates the page for a 304 and never re-fetches an
 * asset whose name it knows.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface DashboardFile {
  readonly body: Buffer;
  readonly contentType: string;
  /** A strong validator: `"<hash of the bytes>"`. */
  readonly etag: string;
}

export interface Dashboard {
  readonly page: DashboardFile;
  /** By file name (served at /assets/NAME). */
  readonly assets: ReadonlyMap<string, DashboardFile>;
}

/** Where the build puts the bundle, beside this module in dist/src/server/. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../dashboard/', import.meta.url));

const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};
/** An asset name: one path segment ending in .js or .css. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(js|css)$/;

/** Reads the built dashboard; throws an Error naming the file and the fix when it is missing or malformed. */
export function loadDashboard(dir: string = DASHBOARD_DIR): Dashboard {
  const manifestPath = join(dir, 'manifest.json');
  let manifest: unknown;
  try {
    manifest = JSON.parse(readBuilt(manifestPath).toString('utf8'));
  } catch (e) {
    if (e instanceof SyntaxError) throw new Error(`dashboard manifest ${manifestPath} is not JSON: ${e.message}; rebuild with npm run build`, { cause: e });
    throw e;
  }
  const m = manifest as { index?: unknown; assets?: unknown };
  if (m.index !== 'index.html' || !Array.isArray(m.assets) || !m.assets.every((a): a is string => typeof a === 'string' && ASSET_NAME.test(a))) {
    throw new Error(`dashboard manifest ${manifestPath} must be {"index": "index.html", "assets": [NAME.js|NAME.css, …]}: got ${JSON.stringify(manifest)}`);
  }
  const assets = new Map<string, DashboardFile>();
  for (const name of m.assets) assets.set(name, file(join(dir, name)));
  return { page: file(join(dir, m.index)), assets };
}

/** True when an If-None-Match header names this ETag (or is `*`); weak comparison, as RFC 9110 asks for GET. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const bare = (t: string): string => (t.startsWith('W/') ? t.slice(2) : t);
  return ifNoneMatch.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || bare(v) === bare(etag);
  });
}

function file(path: string): DashboardFile {
  const body = readBuilt(path);
  const ext = path.slice(path.lastIndexOf('.') + 1);
  const contentType = TYPES[ext];
  if (contentType === undefined) throw new Error(`dashboard file ${path}: no content type for .${ext}`);
  return { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

function readBuilt(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new Error(
      `dashboard file ${path} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): npm run build writes it (scripts/bundle-dashboard.mjs)`,
      { cause: e },
    );
  }
}

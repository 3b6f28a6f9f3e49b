// Writes dist/build-info.json: the git commit the build was made from ("unknown" outside a git
// checkout, e.g. when building from an npm tarball), read by `podipam version`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';

let commit = 'unknown';
let dirty = false;
try {
  commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() !== '';
} catch {
  // not a git checkout, or no git: keep "unknown"
}
mkdirSync('dist', { recursive: true });
writeFileSync('dist/build-info.json', `${JSON.stringify({ commit, dirty, builtAt: new Date().toISOString() })}\n`);

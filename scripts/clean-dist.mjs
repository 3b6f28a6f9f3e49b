// Removes dist/ so a build starts clean: tsc never deletes outputs whose source is gone, and
// scripts/test.mjs would otherwise run a deleted test from a stale build.
import { rmSync } from 'node:fs';

rmSync('dist', { recursive: true, force: true });

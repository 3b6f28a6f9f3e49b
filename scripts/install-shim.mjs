// Second half of npm's install step (package.json "install", after node-gyp builds the addons):
// builds the CNI shim at the installed path. The shim compiles in the path of this package's
// bin/podipam as its standalone fallback, so a shim built on another machine or in another
// directory would point to the wrong place: it is built where it will run. In a fresh git
// checkout dist/ does not exist yet, and `npm run build` builds the shim instead.
import { existsSync } from 'node:fs';

if (existsSync(new URL('../dist/src/cni/version.js', import.meta.url))) await import('./build-shim.mjs');

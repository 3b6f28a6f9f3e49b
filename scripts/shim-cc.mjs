// The C compiler for podipam's static executables — the native CNI shim (scripts/build-shim.mjs)
// and the benches' floor, built like it (bench/lib/lean-driver.ts): $CC when set, else musl's
// wrapper when installed (Debian's musl-tools), else cc. Every pod start execs the shim, and a
// static musl executable starts much sooner than a static glibc one: measured with the benches'
// runtime-like driver (bench/native/cni-driver.c, 3 × 2,000 pairs), the floor program 0.16 ms a
// call against 0.44 ms (glibc 2.36's static start-up and its 750 KB against musl's 19 KB).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether `name` is an executable on PATH. */
function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    try {
      const file = join(dir, name);
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return true;
    } catch {
      // not here
    }
  }
  return false;
}

/** The compiler: $CC, else `musl-gcc` when on PATH, else `cc`. */
export function staticCc() {
  return process.env.CC || (onPath('musl-gcc') ? 'musl-gcc' : 'cc');
}

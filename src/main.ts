/**
 * The single entry of bin/podipam. With CNI_COMMAND set it is the CNI plugin (the file name is
 * the `type` a network config names); otherwise the CLI. Each side is imported lazily so the
 * plugin pays only for what its verb needs.
 */
// A crash point or planted bug armed without the test flag (or naming no known one) is refused
// loudly (src/util/crash-point.ts, planted-bug.ts); nothing is loaded for them when unset.
const refusal =
  (process.env.PODIPAM_CRASH_AT ? (await import('./util/crash-point.js')).crashPointRefusal(process.env) : undefined) ??
  (process.env.PODIPAM_PLANT_BUG ? (await import('./util/planted-bug.js')).plantedBugRefusal(process.env) : undefined);
if (refusal !== undefined) {
  if (process.env.CNI_COMMAND !== undefined) process.stdout.write(`${JSON.stringify({ cniVersion: '1.0.0', code: 4, msg: refusal })}\n`);
  process.stderr.write(`podipam: ${refusal}\n`);
  process.exitCode = 4;
} else if (process.env.CNI_COMMAND !== undefined) {
  process.exitCode = await (await loadPlugin()).runPlugin();
} else {
  const { runCli } = await import('./cli/index.js');
  process.exitCode = await runCli(process.argv.slice(2));
}

/**
 * The plugin entry: the bundle `npm run build` makes of the same code (dist/bundle/plugin/, see
 * scripts/bundle-plugin.mjs: one module to load instead of ~20), else the plain tsc output.
 */
async function loadPlugin(): Promise<typeof import('./plugin/run-plugin.js')> {
  const bundle = '../bundle/plugin/run-plugin.js';
  try {
    return (await import(bundle)) as typeof import('./plugin/run-plugin.js');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
    return import('./plugin/run-plugin.js');
  }
}

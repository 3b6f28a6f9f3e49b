/**
 * The single entry of bin/podipam. With CNI_COMMAND set it is the CNI plugin (the file name is
 * the `type` a network config names); otherwise the CLI. Each side is imported lazily so the
 * plugin pays only for what its verb needs.
 */
if (process.env.CNI_COMMAND !== undefined) {
  const { runPlugin } = await import('./cni/run-plugin.js');
  process.exitCode = await runPlugin();
} else {
  const { runCli } = await import('./cli/index.js');
  process.exitCode = await runCli(process.argv.slice(2));
}

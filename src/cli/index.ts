/**
 * The CLI (bin/podipam without CNI_COMMAND). Each command group lives in its own file and
 * registers itself on the program; actions import their services lazily.
 */
import { Command, CommanderError } from 'commander';
import { registerPool } from './pool.js';
import { registerIpSet } from './ipset.js';
import { registerIpam } from './ipam.js';
import { registerNode } from './node.js';
import { registerController } from './controller.js';
import { registerServe } from './serve.js';
import { registerSimulate } from './simulate.js';
import { registerImport } from './import.js';
import { registerInstallCni } from './install-cni.js';
import { registerVersion } from './version.js';
import { registerAgent } from './agent.js';
import { registerNet } from './net.js';
import { registerDatastore } from './datastore.js';
import { registerMasquerade } from './masquerade.js';
import { registerGc } from './gc.js';
import { UsageError } from './usage-error.js';
import { guardOutput } from './safe-output.js';
import { escapeOutput } from '../util/quote-text.js';

export function buildProgram(): Command {
  const program = new Command('podipam')
    .description('pod IP address management for Kubernetes')
    .option(
      '--datastore <url>',
      'datastore URL: sqlite:PATH, etcd://host:port[,host:port…], etcds://…?ca=…&cert=…&key=… (default: $PODIPAM_DATASTORE, else sqlite in the data directory)',
    )
    .option('--log-level <level>', 'serve/controller/agent: trace, debug, info, warn, error, fatal or silent (default: $PODIPAM_LOG_LEVEL, else info)')
    .option('--log-format <format>', 'serve/controller/agent: text or json lines on stderr (default: $PODIPAM_LOG_FORMAT, else text)')
    .option('-V, --version', 'print the version (as `podipam version`)')
    .showHelpAfterError()
    .exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(escapeOutput(s)) });
  registerPool(program);
  registerIpSet(program);
  registerIpam(program);
  registerNode(program);
  registerController(program);
  registerServe(program);
  registerSimulate(program);
  registerImport(program);
  registerInstallCni(program);
  registerVersion(program);
  registerAgent(program);
  registerNet(program);
  registerDatastore(program);
  registerMasquerade(program);
  registerGc(program);
  return program;
}

/**
 * Runs the CLI; returns the exit code. Errors print one line naming what is wrong, never a
 * stack. Nothing it prints carries a raw control character (safe-output.ts).
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  guardOutput(process.stdout);
  const program = buildProgram();
  try {
    if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) argv = ['version'];
    await program.parseAsync(argv, { from: 'user' });
    // A command may set process.exitCode (e.g. a check that found problems); keep it.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version exit 0; usage errors were already printed by commander.
      return e.exitCode === 0 ? 0 : 2;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`podipam: ${escapeOutput(e.message)}\n`);
      return 2;
    }
    const msg = e instanceof Error ? e.message : String(e);
    process.stderr.write(`podipam: error: ${escapeOutput(msg)}\n`);
    if (process.env.PODIPAM_DEBUG && e instanceof Error) process.stderr.write(`${e.stack}\n`);
    return 1;
  }
}

/**
 * The runner every `podipam import <source>` command ends in (Whereabouts, Calico): given the
 * parsed ImportPlan and the flags `--dry-run`, `--skip-conflicts`, `-o table|json`, it opens the
 * command's datastore (read-only for a dry run: no file is created), applies the plan
 * (src/import/apply-import-plan.ts; a dry run on a copy of the store), and prints the plan —
 * pools, blocks, addresses with their holders — then the conflicts and the outcome.
 *
 * What a dry run prints is what the real run prints, but for the verbs: "would create",
 * "would write", "would adopt", "would refuse" where the real run says "created", "wrote",
 * "adopted", "refused" (JSON: the same document, `"dryRun": true`).
 *
 * Exit code 0 when the plan was written (or, for a dry run, would be), 1 when conflicts stopped
 * it (without --skip-conflicts any conflict means nothing is written), 2 for a usage error.
 */
import type { Command } from 'commander';
import type { ImportOutcome, ImportPlan, ImportedHolder } from '../import/import-plan.js';
import { openCommandStore } from './datastore-url.js';
import { formatJson, formatTable } from './output.js';
import { UsageError } from './usage-error.js';

export interface ImportRunFlags {
  readonly dryRun?: boolean;
  readonly skipConflicts?: boolean;
  /** 'table' (default) or 'json'. */
  readonly output?: string;
}

/** Adds the runner's flags to an import command. */
export function withImportRunOptions(cmd: Command): Command {
  return cmd
    .option('--dry-run', 'check the plan against the datastore and print what the import would do; write nothing')
    .option('--skip-conflicts', 'write everything that has no conflict (without it, any conflict means nothing is written)')
    .option('-o, --output <format>', 'table or json (JSON: {"dryRun", "refused", "plan", "outcome"})');
}

/** UsageError unless `-o` is table or json. */
export function importOutputFormat(output: string | undefined): 'table' | 'json' {
  if (output === undefined || output === 'table') return 'table';
  if (output === 'json') return 'json';
  throw new UsageError(`invalid -o/--output ${JSON.stringify(output)}: expected table or json`);
}

/** Applies `plan` to the command's datastore and prints the report; sets exit code 1 when conflicts stopped it. */
export async function runImport(cmd: Command, plan: ImportPlan, flags: ImportRunFlags): Promise<ImportOutcome> {
  const format = importOutputFormat(flags.output);
  const dryRun = flags.dryRun === true;
  const store = await openCommandStore(cmd, dryRun ? 'read' : 'write');
  let outcome: ImportOutcome;
  try {
    const { applyImportPlan } = await import('../import/apply-import-plan.js');
    outcome = await applyImportPlan(store, plan, { dryRun, skipConflicts: flags.skipConflicts === true });
  } finally {
    await store.close();
  }
  const refused = importRefused(outcome, flags.skipConflicts === true);
  process.stdout.write(format === 'json' ? formatJson({ dryRun, refused, plan, outcome }) : formatImportReport(plan, outcome, { dryRun, refused }));
  if (refused) {
    process.stderr.write(
      `podipam: import ${dryRun ? 'would be ' : ''}refused: ${outcome.conflicts.length} conflict(s), nothing ${dryRun ? 'would be ' : ''}written (see above; --skip-conflicts writes the rest)\n`,
    );
    process.exitCode = 1;
  }
  return outcome;
}

/** True when conflicts stopped the import (nothing written because of them). */
export function importRefused(outcome: ImportOutcome, skipConflicts: boolean): boolean {
  return outcome.conflicts.length > 0 && !skipConflicts;
}

/** Who holds an imported address, as a table cell. */
export function holderText(h: ImportedHolder): string {
  if (h.kind === 'node') return `node ${h.node ?? '?'}`;
  if (h.pod !== undefined) return `pod ${h.namespace === undefined ? '' : `${h.namespace}/`}${h.pod}`;
  return h.containerId === undefined ? '-' : `container ${h.containerId}`;
}

/** The human report: the plan's tables, the conflicts, then the outcome (pure). */
export function formatImportReport(plan: ImportPlan, o: ImportOutcome, { dryRun, refused }: { readonly dryRun: boolean; readonly refused: boolean }): string {
  const v = (would: string, did: string): string => (dryRun ? `would ${would}` : did);
  const parts: string[] = [];
  parts.push(`Import from ${plan.source}: ${plan.pools.length} pool(s), ${plan.blocks.length} block(s), ${plan.addresses.length} address(es)\n`);
  if (plan.pools.length > 0) {
    parts.push(
      '\nPools\n' +
        formatTable(plan.pools, [
          { header: 'NAME', value: (p) => p.name },
          { header: 'CIDR', value: (p) => p.cidr },
          { header: 'BLOCK', value: (p) => `/${p.blockSize}` },
          { header: 'SELECTOR', value: (p) => p.nodeSelector },
          { header: 'DISABLED', value: (p) => p.disabled },
          { header: 'SOURCE', value: (p) => p.source },
        ]),
    );
  }
  if (plan.blocks.length > 0) {
    parts.push(
      '\nBlocks\n' +
        formatTable(plan.blocks, [
          { header: 'CIDR', value: (b) => b.cidr },
          { header: 'POOL', value: (b) => b.pool },
          { header: 'AFFINITY', value: (b) => b.affinity ?? '(none)' },
        ]),
    );
  }
  if (plan.addresses.length > 0) {
    parts.push(
      '\nAddresses\n' +
        formatTable(plan.addresses, [
          { header: 'IP', value: (a) => a.ip },
          { header: 'BLOCK', value: (a) => a.block },
          { header: 'HOLDER', value: (a) => holderText(a.holder) },
          { header: 'NODE', value: (a) => a.holder.node ?? '(unknown)' },
          { header: 'HANDLE', value: (a) => a.holder.handle },
          { header: 'SOURCE', value: (a) => a.holder.sourceHandle },
        ]),
    );
  }
  if (o.conflicts.length > 0) {
    parts.push(
      `\nConflicts (${o.conflicts.length})\n` +
        formatTable(o.conflicts, [
          { header: 'KIND', value: (c) => c.kind },
          { header: 'SUBJECT', value: (c) => c.subject },
          { header: 'DETAIL', value: (c) => c.detail },
        ]),
    );
  }
  parts.push('\n');
  if (o.poolsCreated.length > 0) parts.push(`${v('create', 'created')} pool(s): ${o.poolsCreated.join(', ')}\n`);
  if (o.blocksWritten.length > 0) parts.push(`${v('write', 'wrote')} block(s): ${o.blocksWritten.join(', ')}\n`);
  if (refused) {
    parts.push(
      `${v('refuse', 'refused')}: ${o.conflicts.length} conflict(s); nothing ${dryRun ? 'would be written' : 'written'} (${o.already} already held, ${o.skipped} not written)\n`,
    );
  } else {
    parts.push(`${v('adopt', 'adopted')} ${o.adopted} address(es); ${o.already} already held; ${o.skipped} skipped for conflicts\n`);
  }
  return parts.join('');
}

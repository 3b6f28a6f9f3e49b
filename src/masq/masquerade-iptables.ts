/**
 * Applies and removes the masquerade of src/masq/masquerade-rules.ts with the `iptables` and
 * `ip6tables` programs on PATH (whichever backend they are, nft or legacy: the rules go where
 * the node's other iptables users — kube-proxy, the CNI plugins — put theirs, as long as the
 * same flavour is installed). Per family: the chain is rewritten whole by `iptables-restore
 * --noflush` (atomic), then the one POSTROUTING jump is APPENDED when `-C` does not find it:
 * it comes after every rule already in POSTROUTING, so an operator's own exemptions there
 * (`-A POSTROUTING -d X -j RETURN` — traffic to a VPN, a peered network, a node range that
 * must keep the pods' source addresses) are decided before our MASQUERADE, never pre-empted by
 * it. A jump already present stays where it is (an operator may have moved it on purpose).
 * Idempotent; `-w` waits for the legacy xtables lock instead of failing.
 *
 * Never throws for iptables trouble: each family answers its state, so a caller (the agent,
 * whose pod starts must not depend on it) reports and goes on. A family whose program is
 * missing is `skipped` when it has no pools (nothing to do), `failed` when it has.
 */
import { spawn } from 'node:child_process';
import type { Prefix } from '../ip/index.js';
import { chainRestoreText, jumpArgs, MASQ_CHAIN, type MasqueradeFamily, masqueradeFamilies } from './masquerade-rules.js';

export interface FamilyOutcome {
  readonly family: 4 | 6;
  readonly tool: string;
  /** synced (sync), removed / absent (remove), skipped (no program and nothing to do), failed. */
  readonly state: 'synced' | 'removed' | 'absent' | 'skipped' | 'failed';
  readonly cidrs: readonly string[];
  readonly error?: string;
}

interface Ran {
  readonly code: number | null;
  readonly out: string;
  /** The program could not be started (ENOENT: not installed). */
  readonly missing: boolean;
}

const TIMEOUT_MS = 15_000;

function run(cmd: string, args: readonly string[], input?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', (e: NodeJS.ErrnoException) => resolve({ code: null, out: e.message, missing: e.code === 'ENOENT' }));
    child.on('close', (code, signal) => resolve({ code, out: signal ? `${out}killed by ${signal}` : out, missing: false }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}

const describe = (cmd: string, args: readonly string[], r: Ran): string =>
  r.missing ? `${cmd} not found on PATH (install the iptables package)` : `${cmd} ${args.join(' ')}: ${r.out.trim() || `exit ${r.code}`}`;

/** Writes each family's chain for `pools` and makes sure POSTROUTING jumps to it. */
export async function syncMasquerade(pools: readonly Prefix[]): Promise<FamilyOutcome[]> {
  const out: FamilyOutcome[] = [];
  for (const f of masqueradeFamilies(pools)) out.push(await syncFamily(f));
  return out;
}

async function syncFamily(f: MasqueradeFamily): Promise<FamilyOutcome> {
  const base = { family: f.family, tool: f.tool, cidrs: f.cidrs };
  const restoreArgs = ['-w', '5', '--noflush'];
  const restore = await run(`${f.tool}-restore`, restoreArgs, chainRestoreText(f));
  if (restore.missing && f.cidrs.length === 0) return { ...base, state: 'skipped' };
  if (restore.code !== 0) return { ...base, state: 'failed', error: describe(`${f.tool}-restore`, restoreArgs, restore) };
  const found = await run(f.tool, jumpArgs('-C'));
  if (found.code === 0) return { ...base, state: 'synced' };
  const append = jumpArgs('-A');
  const added = await run(f.tool, append);
  return added.code === 0 ? { ...base, state: 'synced' } : { ...base, state: 'failed', error: describe(f.tool, append, added) };
}

/** Removes the POSTROUTING jump(s) and the chain of both families; `absent` when there was none. */
export async function removeMasquerade(): Promise<FamilyOutcome[]> {
  const out: FamilyOutcome[] = [];
  for (const f of masqueradeFamilies([])) out.push(await removeFamily(f));
  return out;
}

async function removeFamily(f: MasqueradeFamily): Promise<FamilyOutcome> {
  const base = { family: f.family, tool: f.tool, cidrs: [] };
  const list = await run(f.tool, ['-w', '5', '-t', 'nat', '-S', MASQ_CHAIN]);
  if (list.missing) return { ...base, state: 'skipped' };
  if (list.code !== 0) {
    // No such chain: nothing of ours to remove (a dangling jump cannot exist without its chain).
    return { ...base, state: 'absent' };
  }
  // Every copy of the jump (two syncs racing may have added two), then the chain.
  for (let i = 0; i < 100; i++) {
    const del = await run(f.tool, jumpArgs('-D'));
    if (del.code !== 0) break;
  }
  for (const args of [
    ['-w', '5', '-t', 'nat', '-F', MASQ_CHAIN],
    ['-w', '5', '-t', 'nat', '-X', MASQ_CHAIN],
  ]) {
    const r = await run(f.tool, args);
    if (r.code !== 0) return { ...base, state: 'failed', error: describe(f.tool, args, r) };
  }
  return { ...base, state: 'removed' };
}

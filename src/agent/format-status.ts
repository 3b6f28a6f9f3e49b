/** `podipam agent status` as text for people (the --json form is the agent's own JSON). */
import type { AgentStatus } from './agent-stats.js';

export function formatAgentStatus(s: AgentStatus): string {
  const lines = [
    `agent pid ${s.pid} on ${s.socket}, node ${s.node}, up ${s.uptimeSeconds}s, ${s.inFlight} in flight`,
    `back ends: ${
      Object.entries(s.backends)
        .map(([b, n]) => `${b} ${n}`)
        .join(', ') || 'none used yet'
    }`,
    `datastore: ${s.datastore.open.length} open, ${s.datastore.roundTrips} round trips, ${s.datastore.groupCommits} group commits carrying ${s.datastore.groupedAdds} ADDs, ${s.datastore.groupReleases ?? 0} group releases carrying ${s.datastore.groupedDels ?? 0} DELs`,
  ];
  const c = s.podCache;
  if (c) {
    lines.push(
      `pod cache${c.synced ? '' : " (not synced yet: placement reads only the runtime's pod annotations)"}: ${c.pods} pods, ${c.namespaces} namespaces, ${c.events} events, ${c.resumes} watch resumes, ${c.relists} relists, ${c.errors} errors${c.lastError ? `; last error ${c.lastError.at}: ${c.lastError.message}` : ''}`,
    );
  }
  const w = s.warmPool;
  if (w) {
    const fam = Object.entries(w.pools)
      .map(([f, c]) => `${f} idle ${c.idle}, in use ${c.inUse}, returning ${c.returning}, pending ${c.pending}`)
      .join('; ');
    lines.push(
      `warm pool${w.ready ? '' : ' (not ready)'}: min/max idle ${w.minIdle}/${w.maxIdle}, capacity ${w.capacity}; ${fam || 'no family yet'}${w.quarantined ? `; ${w.quarantined} quarantined (held, not known to be free)` : ''}`,
    );
    const g = w.pods?.lastGc;
    const gc = !w.pods?.kube
      ? 'no pod GC (no kubeconfig)'
      : g === undefined
        ? 'no pod GC run yet'
        : `last pod GC ${new Date(g.at).toISOString()}: ${g.ok ? `${g.listed} pods listed, ${g.released} released` : `list failed, nothing released (${g.error})`}`;
    if (w.pods)
      lines.push(
        `sticky: ${w.stickyReservations} reservations (for ${w.stickyForMs / 1000} s), ${w.pods.stickyHits} hits, ${w.pods.lookupsFailed}/${w.pods.lookups} pod lookups failed, ${w.pods.cacheHits} owners from the pod cache; ${gc}; ${w.pods.gcReleases} GC releases, ${w.pods.gcListFailures} failed lists; pod store ${w.pods.podStore}`,
      );
    lines.push(
      `warm pool: ${w.hits} hits, ${w.misses} misses, ${w.direct} annotated pods allocated directly (${w.directAdds} made, ${w.directReleases} released), ${w.refillTxns} refill txns (${w.refilled} addresses), ${w.returnTxns} return txns (${w.returned}), write-behind ${w.writeBehindDepth} queued (oldest ${w.writeBehindAgeMs} ms), ${w.writeTxns} write txns${w.lastError ? `; last error: ${w.lastError}` : ''}`,
    );
  }
  if (s.headroom) lines.push(headroomLine(s.headroom));
  if (s.masquerade) lines.push(masqueradeLine(s.masquerade));
  if (s.runtimeReconcile) lines.push(...runtimeReconcileLines(s.runtimeReconcile));
  for (const [verb, results] of Object.entries(s.requests)) {
    const l = s.latencyMs[verb];
    const counts = Object.entries(results)
      .map(([r, n]) => `${r} ${n}`)
      .join(', ');
    lines.push(`${verb.padEnd(7)} ${counts}${l ? `; p50 ${l.p50} ms, p90 ${l.p90} ms, p99 ${l.p99} ms, max ${l.max} ms (last ${l.n})` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

/** One line: each family's headroom and its parts, the taint. */
function headroomLine(h: NonNullable<AgentStatus['headroom']>): string {
  const fams = Object.entries(h.families).map(
    ([f, x]) =>
      `${f} ${x.headroom}${x.exhausted ? ' EXHAUSTED' : ''} (${x.free} free in ${x.blocks}/${x.maxBlocks} blocks, ${x.idle} idle, ${x.claimable} in ${x.claimableBlocks} claimable blocks, bound by ${x.claimLimit}${x.mayBorrow ? '; may borrow' : ''})`,
  );
  const taint =
    h.taint === 'off'
      ? 'no taint (no kubeconfig)'
      : h.taintValue
        ? `tainted podipam.io/ip-exhausted=${h.taintValue}:NoSchedule`
        : `not tainted (cleared at ${h.clearAt})`;
  const when = h.at === undefined ? 'not computed yet' : fams.join('; ') || 'no pool for this node';
  return `headroom: ${when}; ${taint}${h.error ? `; last resync failed: ${h.error}` : ''}`;
}

/** One line: the masquerade's state and what each family masquerades. */
function masqueradeLine(m: NonNullable<AgentStatus['masquerade']>): string {
  const fam = m.families.map((f) => `IPv${f.family} ${f.state}${f.cidrs.length > 0 ? ` (from ${f.cidrs.join(', ')})` : ''}`).join('; ');
  return `masquerade: ${m.state}${m.lastSyncAt ? ` at ${m.lastSyncAt}` : ''}, ${m.syncs} syncs, ${m.failures} failed${fam ? `; ${fam}` : ''}${m.error ? `; last error: ${m.error}` : ''}`;
}

/** The runtime reconciliation's state, then one line per suspected leak. */
function runtimeReconcileLines(r: NonNullable<AgentStatus['runtimeReconcile']>): string[] {
  const head =
    `runtime reconciliation (${r.endpoint}, every ${r.intervalMs / 1000} s, grace ${r.graceMs / 1000} s): ${r.state}` +
    `${r.sandboxes !== undefined ? `, ${r.sandboxes} sandboxes` : ''}, ${r.allocations} allocations, ${r.suspectedCount} suspected leaks, ${r.freed['runtime-absent'] ?? 0} freed, ${r.errors} errors` +
    `${r.lastSuccessAt ? `; last success ${r.lastSuccessAt}` : ''}${r.refused ? `; nothing freed: ${r.refused}` : ''}${r.lastError ? `; last error: ${r.lastError}` : ''}`;
  return [head, ...r.suspected.map((x) => `  suspected: ${x.network} ${x.containerId}/${x.ifname} (${x.addresses.join(', ')}) in ${x.source}: ${x.reason}`)];
}

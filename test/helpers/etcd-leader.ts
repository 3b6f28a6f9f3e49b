/**
 * Killing the etcd leader, proven: the member is asked right before the kill and must name
 * itself leader, and afterwards the survivors must elect a new leader in a later raft term —
 * an election the kill caused. A follower killed by mistake (a re-election between asking and
 * killing) fails the test instead of passing it without a leader loss.
 */
import { ETCD_ELECTION_TIMEOUT_MS, ETCD_HEARTBEAT_MS, type EtcdCluster, type EtcdMember } from './etcd.js';

interface MemberStatus {
  readonly memberId: string;
  readonly leader: string;
  readonly term: bigint;
}

async function status(m: EtcdMember): Promise<MemberStatus> {
  const res = await fetch(`${m.clientUrl}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`${m.name} maintenance/status: HTTP ${res.status} ${await res.text()}`);
  const s = (await res.json()) as { header?: { member_id?: string }; leader?: string; raftTerm?: string };
  if (!s.header?.member_id || !s.leader || s.raftTerm === undefined) throw new Error(`${m.name} maintenance/status: unexpected answer ${JSON.stringify(s)}`);
  return { memberId: s.header.member_id, leader: s.leader, term: BigInt(s.raftTerm) };
}

export interface Election {
  /** Index of the new leader, and its raft term (later than the killed leader's). */
  readonly newLeader: number;
  readonly termAfter: bigint;
  /** performance.now() when a survivor first named the new leader. */
  readonly electedAt: number;
}

export interface LeaderKill {
  /** Index in `members` of the member killed, which named itself leader just before. */
  readonly killed: number;
  /** Raft term in which it led. */
  readonly termBefore: bigint;
  /** performance.now() right after the kill. */
  readonly killedAt: number;
  /**
   * performance.now() before which no new leader can exist: a follower campaigns only after its
   * election timeout passed with no heartbeat, and the last one came at most a heartbeat
   * interval before the signal was sent. A lower bound of the outage that does not depend on
   * how late `elected` notices the new leader.
   */
  readonly leaderlessUntil: number;
  /** Settles when the survivors have elected another leader in a later term; rejects after `electionMs`. */
  readonly elected: Promise<Election>;
}

/**
 * Finds the leader (the member that names itself leader, asked with a 5 s timeout: a loaded
 * machine answers slowly; up to 10 rounds) and SIGKILLs it at once; resolves after the kill.
 * `elected` then waits (at most `electionMs`, default 30 s, polling every 50 ms) for a survivor
 * to name a different leader in a later term. Throws if no member names itself leader.
 */
export async function killLeader(cluster: EtcdCluster, electionMs = 30_000): Promise<LeaderKill> {
  const { members } = cluster;
  let found: { index: number; term: bigint } | undefined;
  const errors: string[] = [];
  for (let attempt = 0; attempt < 10 && found === undefined; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 200));
    const answers = await Promise.all(members.map((m) => (m.running ? status(m).catch((e: Error) => e) : Promise.resolve(undefined))));
    for (const [index, own] of answers.entries()) {
      if (own instanceof Error) errors.push(own.message);
      else if (own !== undefined && own.leader === own.memberId) found = { index, term: own.term };
    }
  }
  if (found === undefined) throw new Error(`no member named itself leader in 10 rounds: ${errors.slice(-3).join('; ')}`);
  const { index: killed, term: termBefore } = found;
  const signalledAt = performance.now();
  await members[killed]!.kill('SIGKILL');
  const killedAt = performance.now();
  const leaderlessUntil = signalledAt + ETCD_ELECTION_TIMEOUT_MS - ETCD_HEARTBEAT_MS;
  const elected = (async (): Promise<Election> => {
    const deadline = Date.now() + electionMs;
    for (;;) {
      for (const [i, m] of members.entries()) {
        if (i === killed || !m.running) continue;
        const s = await status(m).catch(() => undefined);
        if (s === undefined || s.leader === '0' || s.term <= termBefore) continue;
        const newLeader = await indexOf(members, s.leader);
        if (newLeader !== undefined && newLeader !== killed) return { newLeader, termAfter: s.term, electedAt: performance.now() };
      }
      if (Date.now() > deadline) throw new Error(`no new leader in a term after ${termBefore} within ${electionMs} ms of killing member ${killed}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  elected.catch(() => {}); // the caller awaits it
  return { killed, termBefore, killedAt, leaderlessUntil, elected };
}

async function indexOf(members: readonly EtcdMember[], id: string): Promise<number | undefined> {
  for (const [i, m] of members.entries()) {
    if (!m.running) continue;
    const s = await status(m).catch(() => undefined);
    if (s?.memberId === id) return i;
  }
  return undefined;
}

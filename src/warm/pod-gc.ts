/**
 * The warm pool's pod GC decision, pure (Terway's GC goroutine, after the seed): given the pods
 * the API server lists on this node, the attachments the pod store holds live, the time the
 * list was asked for and now → which attachments' pods are gone (first seen missing), which
 * came back, and which to release. An attachment is released when its pod is gone: at once
 * when it is not sticky, once it has been gone for `stickyForMs` when it is. Never released:
 * an attachment with no pod name (not a Kubernetes pod: nothing can prove it gone), or one
 * added since the list was asked for (the list may predate its pod). The caller only calls this
 * with a list that succeeded: no list, no release; and it plans again with the pods a get by
 * name found (pod-tracker.ts), so a pod missing from the list is released only on its 404 or
 * another uid under its name.
 */

/** A pod as the API server lists it. */
export interface ListedPod {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string | undefined;
}

/** A live attachment of the pod store, as the GC needs it. */
export interface GcAttachment {
  readonly key: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly uid: string | undefined;
  readonly sticky: boolean;
  readonly addedAt: number;
  readonly goneAt: number | undefined;
}

export interface PodGcInput {
  readonly listed: readonly ListedPod[];
  readonly attachments: readonly GcAttachment[];
  /** When the list was asked for. */
  readonly listedAt: number;
  readonly now: number;
  readonly stickyForMs: number;
}

export interface PodGcPlan {
  /** Pods first seen missing: record `goneAt = listedAt`. */
  readonly gone: readonly string[];
  /** Pods listed again after being seen missing: clear `goneAt`. */
  readonly back: readonly string[];
  /** Attachments to release now (as gone for good: not sticky). */
  readonly release: readonly string[];
}

export function planPodGc(input: PodGcInput): PodGcPlan {
  const { listed, attachments, listedAt, now, stickyForMs } = input;
  const byName = new Map<string, ListedPod>();
  for (const p of listed) byName.set(`${p.namespace}/${p.name}`, p);
  const gone: string[] = [];
  const back: string[] = [];
  const release: string[] = [];
  for (const a of attachments) {
    if (a.namespace === undefined || a.name === undefined) continue;
    if (a.addedAt >= listedAt) continue;
    const p = byName.get(`${a.namespace}/${a.name}`);
    // A pod of the same name with another uid is a new pod: this attachment's pod is gone.
    const present = p !== undefined && (a.uid === undefined || p.uid === undefined || p.uid === a.uid);
    if (present) {
      if (a.goneAt !== undefined) back.push(a.key);
      continue;
    }
    const since = a.goneAt ?? listedAt;
    if (a.goneAt === undefined) gone.push(a.key);
    if (!a.sticky || stickyForMs === 0 || now - since >= stickyForMs) release.push(a.key);
  }
  return { gone, back, release };
}

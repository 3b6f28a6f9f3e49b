/**
 * Which revision and time an agent's holder view stands on for `ipam check` (check-holders.ts):
 * its own entry's revision and `at`, or those of the agent's heartbeat (`agent-beats/<node>`,
 * agent-beat-record.ts) when the heartbeat vouches for exactly this view. The agent writes the
 * heartbeat instead of re-publishing an unchanged view, so a check can still tell an agent that
 * has answered a change (it vouched after the change) from one that has not. A heartbeat counts
 * only when it names the view entry's current revision (`viewRev` = the view's modRevision: a
 * heartbeat naming an older or newer view says nothing about this one) and was itself written
 * after the view (its revision is higher: a heartbeat from before the view was rewritten, or
 * in the same txn, adds nothing). Pure.
 */

/** The view entry as read: its revision and its own `at`. */
export interface ViewStanding {
  readonly rev: number;
  readonly at: string;
}

/** The heartbeat entry as read: its revision and its decoded fields. */
export interface BeatStanding {
  readonly rev: number;
  readonly viewRev: number;
  readonly at: string;
}

export interface VouchedView extends ViewStanding {
  /** `beat`: the heartbeat vouched for the view; `view`: it stands on its own entry. */
  readonly by: 'view' | 'beat';
}

/** The revision and time the view stands on; see the module comment. */
export function vouchedView(view: ViewStanding, beat: BeatStanding | undefined): VouchedView {
  if (beat !== undefined && beat.viewRev === view.rev && beat.rev > view.rev) return { rev: beat.rev, at: beat.at, by: 'beat' };
  return { rev: view.rev, at: view.at, by: 'view' };
}

/**
 * The history follower's metrics (src/history/history-follower.ts), read from its status at
 * scrape time: the last datastore revision applied, the holds started and ended and the gaps
 * recorded since serve began, and how long after its writer's stamp a change was applied.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { HistoryFollowerStatus } from '../history/history-follower.js';

export function addHistoryMetrics(registry: Registry, status: () => HistoryFollowerStatus): void {
  const registers = [registry];
  new Gauge({
    name: 'podipam_history_position_revision',
    help: 'the last datastore revision the allocation history has applied',
    registers,
    collect() {
      this.set(status().revision);
    },
  });
  new Counter({
    name: 'podipam_history_events_total',
    help: 'allocation history events recorded since serve started, by event (assigned, released, gap)',
    labelNames: ['event'],
    registers,
    collect() {
      const e = status().events;
      this.reset();
      this.inc({ event: 'assigned' }, e.assigned);
      this.inc({ event: 'released' }, e.released);
      this.inc({ event: 'gap' }, e.gap);
    },
  });
  new Gauge({
    name: 'podipam_history_lag_seconds',
    help: 'how long after its writer stamped it the last stamped change reached the allocation history',
    registers,
    collect() {
      this.set(status().lagMs / 1000);
    },
  });
  new Gauge({
    name: 'podipam_history_open_holds',
    help: 'addresses the allocation history sees held by a pod now',
    registers,
    collect() {
      this.set(status().openHolds);
    },
  });
}

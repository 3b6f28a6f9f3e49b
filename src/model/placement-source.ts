/**
 * Where one part of a pod's placement came from (the annotation, its text, the object carrying
 * it), the pools it names, and the error a placement annotation that cannot be honoured throws: an invalid-config
 * failure (CNI code 7) naming the annotation, where it was found, its value (quoted with its
 * control characters escaped, cut after 200 characters) and the pod.
 */
import type { ClassifiedError } from './failure.js';
import { escapeControls, quoteText } from '../util/quote-text.js';

/** Where one part of a placement came from: the annotation(s), their text, and the object carrying them. */
export interface AnnotationSource {
  /** The annotation's key (several keys joined by ", " when they were read together, e.g. Calico's ipv4pools + ipv6pools). */
  readonly annotation: string;
  /** Its value as written (joined likewise). */
  readonly value: string;
  /** `pod NS/NAME` or `namespace NS`. */
  readonly on: string;
}

export interface Sourced<T> extends AnnotationSource {
  readonly parsed: T;
}

/**
 * Pools per family, for annotations that name them so (Cilium's ipv4-pool / ipv6-pool,
 * Spiderpool's ipv4 / ipv6 lists): a family's address comes only from its list, in order, and
 * a family without a list gets none. Entries are pool names or, from Spiderpool's
 * annotations, patterns (src/model/pool-pattern.ts).
 */
export interface PoolsByFamily {
  readonly 4?: readonly string[];
  readonly 6?: readonly string[];
}

/** The pools a placement names: `parsed` in order of preference (every family's), and per family when the annotation said so. */
export interface SourcedPools extends Sourced<readonly string[]> {
  readonly byFamily?: PoolsByFamily;
}

/** A placement annotation that cannot be honoured: its value is malformed, or names a pool or set that cannot serve the pod. */
export class PlacementError extends Error implements ClassifiedError {
  override readonly name = 'PlacementError';
  readonly failure = 'invalid-config';

  constructor(
    readonly source: AnnotationSource,
    /** The pod the call is for ("" when the runtime named none). */
    readonly pod: string,
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(
      `annotation ${source.annotation}=${quoteText(source.value)} on ${escapeControls(source.on)}${source.on.startsWith('pod ') || pod === '' ? '' : ` (pod ${escapeControls(pod)})`}: ${problem}`,
      options,
    );
  }
}

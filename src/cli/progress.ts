/**
 * A progress bar on stderr for long CLI work (`podipam simulate`, `import host-local`,
 * `ipam check` on a big store). It draws only when stderr is a terminal or when asked
 * (`force`, or PODIPAM_PROGRESS=1); otherwise every call is a no-op, so scripts and pipes see
 * nothing. On a terminal it redraws one line at most ~12 times a second; when forced onto a
 * non-terminal it prints a plain line at most once a second, and always a final one.
 */
export interface ProgressOptions {
  readonly total: number;
  readonly label: string;
  /** Draw even when the stream is not a TTY. Default: $PODIPAM_PROGRESS === '1'. */
  readonly force?: boolean;
  readonly stream?: NodeJS.WriteStream;
}

export interface Progress {
  /** Adds `n` (default 1) done units; `note` replaces the trailing text. */
  tick(n?: number, note?: string): void;
  /** Sets the done count. */
  update(done: number, note?: string): void;
  /** Draws the final state and ends the line. Idempotent. */
  finish(note?: string): void;
}

const WIDTH = 28;

export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  const tty = stream.isTTY === true;
  const enabled = tty || (options.force ?? process.env.PODIPAM_PROGRESS === '1');
  const total = Math.max(0, options.total);
  const started = Date.now();
  let done = 0;
  let note = '';
  let lastDraw = 0;
  let finished = false;

  const line = (): string => {
    const frac = total === 0 ? 1 : Math.min(1, done / total);
    const filled = Math.round(frac * WIDTH);
    const secs = (Date.now() - started) / 1000;
    const rate = secs > 0 ? done / secs : 0;
    const bar = tty ? `${'█'.repeat(filled)}${'░'.repeat(WIDTH - filled)}` : `${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}`;
    const pct = `${Math.floor(frac * 100)}`.padStart(3);
    return `${options.label} [${bar}] ${pct}% ${done}/${total} ${rate.toFixed(rate < 10 ? 1 : 0)}/s${note ? ` ${note}` : ''}`;
  };
  const draw = (force: boolean): void => {
    if (!enabled || finished) return;
    const now = Date.now();
    if (!force && now - lastDraw < (tty ? 80 : 1000)) return;
    lastDraw = now;
    if (tty) stream.write(`\r${line()}\x1b[K`);
    else stream.write(`${line()}\n`);
  };

  return {
    tick(n = 1, text) {
      done += n;
      if (text !== undefined) note = text;
      draw(false);
    },
    update(value, text) {
      done = value;
      if (text !== undefined) note = text;
      draw(false);
    },
    finish(text) {
      if (finished) return;
      if (text !== undefined) note = text;
      draw(true);
      if (enabled && tty) stream.write('\n');
      finished = true;
    },
  };
}

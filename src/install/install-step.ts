/** One thing install-cni / uninstall-cni did (or, with --dry-run, would do). */
export interface InstallStep {
  readonly action: 'mkdir' | 'write' | 'replace' | 'take-over' | 'unchanged' | 'remove' | 'keep' | 'rmdir' | 'warn';
  readonly path: string;
  readonly detail?: string;
}

/** "wrote /opt/cni/bin/podipam (sha256 1a2b3c4d5e6f)" — one line per step, past tense or "would …". */
export function stepLine(s: InstallStep, dryRun: boolean): string {
  const verbs: Record<InstallStep['action'], [string, string]> = {
    mkdir: ['created', 'would create'],
    write: ['wrote', 'would write'],
    replace: ['replaced', 'would replace'],
    'take-over': ['took over', 'would take over'],
    unchanged: ['unchanged', 'unchanged'],
    remove: ['removed', 'would remove'],
    keep: ['kept', 'would keep'],
    rmdir: ['removed directory', 'would remove directory'],
    warn: ['note:', 'note:'],
  };
  const [done, would] = verbs[s.action];
  return `${dryRun ? would : done} ${s.path}${s.detail ? ` (${s.detail})` : ''}`;
}

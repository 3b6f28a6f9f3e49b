/** `podipam version [--json]` and `podipam --version` (same text). */
import type { Command } from 'commander';

export function registerVersion(program: Command): void {
  program
    .command('version')
    .description('print the version, commit, CNI spec versions, Node.js version and which native parts are present')
    .option('--json', 'as JSON')
    .action(async (f: { json?: boolean }) => {
      const { versionInfo, versionText } = await import('../version/version-info.js');
      const v = versionInfo();
      process.stdout.write(f.json ? `${JSON.stringify(v, null, 2)}\n` : `${versionText(v)}\n`);
    });
}

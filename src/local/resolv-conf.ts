/**
 * host-local's `resolvConf`: a resolv.conf on the host parsed into the result's `dns` — the
 * `nameserver` lines (first word each), `domain` (last one wins), `search` and `options` (every
 * word); blank lines and lines starting with `#` or `;` skipped.
 */
import { fs } from '../util/builtins.js';
import { ResolvConfError } from './errors.js';

/** What a resolv.conf says, in the shape of a CNI result's `dns`. */
export interface ResolvConf {
  readonly nameservers: readonly string[];
  readonly domain: string;
  readonly search: readonly string[];
  readonly options: readonly string[];
}

/** Parses resolv.conf text (pure). */
export function parseResolvConf(text: string): ResolvConf {
  const nameservers: string[] = [];
  const search: string[] = [];
  const options: string[] = [];
  let domain = '';
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line === '' || line[0] === '#' || line[0] === ';') continue;
    const fields = line.split(/\s+/);
    if (fields.length < 2) continue;
    switch (fields[0]) {
      case 'nameserver':
        nameservers.push(fields[1]!);
        break;
      case 'domain':
        domain = fields[1]!;
        break;
      case 'search':
        search.push(...fields.slice(1));
        break;
      case 'options':
        options.push(...fields.slice(1));
        break;
    }
  }
  return { nameservers, domain, search, options };
}

/**
 * Reads and parses the file at `path`. A missing or unreadable file is a ResolvConfError (code 5)
 * with Go's wording (`open /etc/x: no such file or directory`).
 */
export function readResolvConf(path: string): ResolvConf {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    const m = /^[A-Z]+: ([^,]+),/.exec((e as Error).message);
    const what = (e as NodeJS.ErrnoException).code === 'EISDIR' ? 'read' : 'open';
    throw new ResolvConfError(what, path, m?.[1] ?? (e as Error).message, { cause: e });
  }
  return parseResolvConf(text);
}

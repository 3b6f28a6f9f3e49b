/**
 * podipam's logical backup: every key of a datastore with its value, as JSON lines, the same
 * for every back end (so a backup of SQLite restores into etcd and the reverse).
 *
 *   {"podipamBackup":1,"source":"etcd://…","rev":1234,"at":"2026-…Z","keys":N}   header
 *   {"key":"pools/pods-v4","value":"{…}"}                                           N lines, key order
 *   {"end":true,"keys":N,"sha256":"…"}                                              trailer
 *
 * `sha256` is of the N entry lines (each with its "\n"), so a file cut short, garbled or
 * edited is refused whole. Pure: text in, text out; parseBackup names the file and the line of
 * the first problem. Revisions are not kept: a restored store counts them afresh.
 */
import { createHash } from 'node:crypto';
import { checkKey } from './check-input.js';
import { compareKeys } from './key-order.js';

/** The format version this podipam writes and reads. */
export const BACKUP_FORMAT = 1;

export interface BackupHeader {
  readonly podipamBackup: number;
  /** The datastore it was read from (password hidden). */
  readonly source: string;
  /** The revision every entry was read at. */
  readonly rev: number;
  /** When it was taken (ISO 8601). */
  readonly at: string;
  readonly keys: number;
}

export interface BackupEntry {
  readonly key: string;
  readonly value: string;
}

export interface Backup {
  readonly header: BackupHeader;
  readonly entries: readonly BackupEntry[];
}

/** A backup file that cannot be restored: names the file and the line. */
export class BackupFileError extends Error {
  override readonly name = 'BackupFileError';
  constructor(file: string, line: number | undefined, message: string, options?: ErrorOptions) {
    super(`backup ${file}${line === undefined ? '' : ` line ${line}`}: ${message}`, options);
  }
}

/** The file's text for `entries` (in any order: written in key order). */
export function formatBackup(source: string, rev: number, at: Date, entries: readonly BackupEntry[]): string {
  const sorted = [...entries].sort((a, b) => compareKeys(a.key, b.key));
  const lines = sorted.map((e) => `${JSON.stringify({ key: e.key, value: e.value })}\n`);
  const hash = createHash('sha256');
  for (const l of lines) hash.update(l);
  const header: BackupHeader = { podipamBackup: BACKUP_FORMAT, source, rev, at: at.toISOString(), keys: sorted.length };
  return `${JSON.stringify(header)}\n${lines.join('')}${JSON.stringify({ end: true, keys: sorted.length, sha256: hash.digest('hex') })}\n`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses and checks a whole backup file's text: the header (format version), every entry (a
 * valid key, a string value, keys strictly increasing), the trailer (count and SHA-256 of the
 * entry lines), nothing after it. Throws BackupFileError naming `file`, the line and what is
 * wrong — before anything is written anywhere.
 */
export function parseBackup(file: string, text: string): Backup {
  if (text.startsWith('SQLite format 3\0'))
    throw new BackupFileError(
      file,
      undefined,
      'this is a SQLite database file (a --snapshot backup of SQLite): restore it by copying it in place of the datastore file while nothing has it open',
    );
  if (!text.endsWith('\n')) {
    const lines = text.split('\n').length;
    throw new BackupFileError(file, lines, 'the file does not end with a newline: it is cut short (truncated)');
  }
  const lines = text.slice(0, -1).split('\n');
  const parseLine = (i: number): unknown => {
    const line = lines[i] as string;
    try {
      return JSON.parse(line);
    } catch (e) {
      throw new BackupFileError(file, i + 1, `not JSON (${(e as Error).message}): ${JSON.stringify(line.slice(0, 80))}`, { cause: e });
    }
  };
  const head = parseLine(0);
  if (!isObject(head) || !('podipamBackup' in head))
    throw new BackupFileError(
      file,
      1,
      'not a podipam backup (no "podipamBackup" header); an etcd snapshot is restored with etcdutl snapshot restore, not here',
    );
  if (head.podipamBackup !== BACKUP_FORMAT)
    throw new BackupFileError(file, 1, `format ${JSON.stringify(head.podipamBackup)}: this podipam reads format ${BACKUP_FORMAT}`);
  const keys = head.keys;
  if (typeof keys !== 'number' || !Number.isSafeInteger(keys) || keys < 0) throw new BackupFileError(file, 1, `"keys" is ${JSON.stringify(keys)}, not a count`);
  if (typeof head.rev !== 'number' || typeof head.source !== 'string' || typeof head.at !== 'string')
    throw new BackupFileError(file, 1, 'the header needs "source", "rev" and "at"');
  if (lines.length < keys + 2)
    throw new BackupFileError(
      file,
      lines.length,
      `the header announces ${keys} keys but the file ends after ${Math.max(0, lines.length - 1)} lines: it is cut short (truncated)`,
    );
  if (lines.length > keys + 2) throw new BackupFileError(file, keys + 3, `more lines than the ${keys} keys and the trailer the header announces`);
  const hash = createHash('sha256');
  const entries: BackupEntry[] = [];
  for (let i = 1; i <= keys; i++) {
    const e = parseLine(i);
    if (!isObject(e) || typeof e.key !== 'string' || typeof e.value !== 'string' || Object.keys(e).length !== 2) {
      throw new BackupFileError(file, i + 1, `an entry is {"key": string, "value": string}, not ${JSON.stringify(lines[i]?.slice(0, 80))}`);
    }
    try {
      checkKey(e.key);
    } catch (err) {
      throw new BackupFileError(file, i + 1, (err as Error).message, { cause: err });
    }
    const prev = entries[entries.length - 1];
    if (prev !== undefined && compareKeys(prev.key, e.key) >= 0)
      throw new BackupFileError(file, i + 1, `key ${JSON.stringify(e.key)} is not after ${JSON.stringify(prev.key)} (keys are written once each, in order)`);
    entries.push({ key: e.key, value: e.value });
    hash.update(`${lines[i]}\n`);
  }
  const end = parseLine(keys + 1);
  if (!isObject(end) || end.end !== true) throw new BackupFileError(file, keys + 2, 'expected the trailer {"end": true, …}: the file is cut short or garbled');
  if (end.keys !== keys) throw new BackupFileError(file, keys + 2, `the trailer counts ${JSON.stringify(end.keys)} keys, the header ${keys}`);
  const sum = hash.digest('hex');
  if (end.sha256 !== sum)
    throw new BackupFileError(
      file,
      keys + 2,
      `the entries' SHA-256 is ${sum}, the trailer says ${JSON.stringify(end.sha256)}: the file was changed or garbled`,
    );
  return { header: { podipamBackup: BACKUP_FORMAT, source: head.source, rev: head.rev, at: head.at, keys }, entries };
}

/**
 * The install record lists a path install-cni could not have written: a file other than
 * `<bin-dir>/podipam` or a `.conflist` in `<conf-dir>`, a directory not on the way to either, a
 * path that is relative or not normal (`..`). Install and uninstall act on nothing then: a record
 * is only trusted inside the directories given on the command line.
 */
export class InstallRecordError extends Error {
  override readonly name = 'InstallRecordError';
  constructor(
    readonly record: string,
    readonly entries: readonly string[],
    binDir: string,
    confDir: string,
  ) {
    super(
      `install record ${record} lists ${entries.map((e) => JSON.stringify(e)).join(', ')}, outside --bin-dir ${binDir} and --conf-dir ${confDir} ` +
        `(install writes only ${binDir}/podipam and *.conflist files in ${confDir}, and creates only the directories on the way to them): nothing changed. ` +
        'If podipam was installed with another --bin-dir or --conf-dir, give those; otherwise the record was not written by install-cni: remove the entries, or the record, by hand',
    );
  }
}

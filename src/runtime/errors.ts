/**
 * The errors the runtime client raises, each carrying the data a caller branches on. Messages
 * name the file, field, plugin and value at fault; a plugin's own CNI error is kept as it sent it.
 */

/** A network config file (or the directory) cannot be read or is invalid. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    /** The file (or directory) at fault. */
    readonly file: string,
    /** The field at fault ("" when the file as a whole is). */
    readonly field: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`${file}: ${field ? `${field}: ` : ''}${reason}`, options);
  }
}

/** No config in the directory names the network (libcni's NotFoundError / NoConfigsFoundError). */
export class NetworkNotFoundError extends Error {
  override readonly name = 'NetworkNotFoundError';
  constructor(
    readonly dir: string,
    readonly network: string,
    readonly noConfigs: boolean,
  ) {
    super(noConfigs ? `no net configurations found in ${dir} (looking for network "${network}")` : `no net configuration with name "${network}" in ${dir}`);
  }
}

/** The plugin named by `type` is not a regular file in any bin dir, or its name is refused. */
export class PluginNotFoundError extends Error {
  override readonly name = 'PluginNotFoundError';
  constructor(
    readonly plugin: string,
    readonly dirs: readonly string[],
    reason?: string,
  ) {
    super(reason ?? `failed to find plugin "${plugin}" in path [${dirs.join(' ')}]`);
  }
}

/**
 * A plugin ran and failed: non-zero exit (its CNI error JSON parsed into code/msg/details when it
 * printed one), death by a signal, or output that is not what the verb must answer.
 */
export class PluginError extends Error {
  override readonly name = 'PluginError';
  constructor(
    readonly plugin: string,
    readonly verb: string,
    /** The CNI error code the plugin reported; undefined when it printed no error JSON. */
    readonly code: number | undefined,
    readonly msg: string,
    readonly details: string | undefined,
    /** Exit status (null when killed by a signal). */
    readonly exitCode: number | null,
    readonly signal: string | null,
    readonly stderr: string,
    options?: ErrorOptions,
  ) {
    super(`plugin "${plugin}" ${verb}: ${code !== undefined ? `CNI error ${code}: ` : ''}${msg}${details ? `; ${details}` : ''}`, options);
  }
}

/** A plugin did not finish within the timeout; it (and its process group) was killed. */
export class PluginTimeoutError extends Error {
  override readonly name = 'PluginTimeoutError';
  constructor(
    readonly plugin: string,
    readonly verb: string,
    readonly timeoutMs: number,
  ) {
    super(`plugin "${plugin}" ${verb}: no answer after ${timeoutMs} ms, killed`);
  }
}

/**
 * One plugin of a chain failed (libcni's `plugin type="x" name="n" failed (add): …`). On ADD,
 * `rollback` lists what the clean-up DELs of the plugins already run reported (empty: all clean).
 */
export class ChainError extends Error {
  override readonly name = 'ChainError';
  constructor(
    readonly network: string,
    readonly plugin: string,
    readonly verb: string,
    override readonly cause: Error,
    readonly rollback: readonly Error[] = [],
  ) {
    const rb = rollback.length ? `; rollback also failed: ${rollback.map((e) => e.message).join('; ')}` : '';
    super(`network "${network}": plugin type="${plugin}" failed (${verb.toLowerCase()}): ${cause.message}${rb}`);
  }
}

/** Attaching (or detaching) several networks of one pod failed for some of them. */
export class AttachError extends Error {
  override readonly name = 'AttachError';
  constructor(
    readonly containerId: string,
    readonly failures: readonly Error[],
    readonly cleanup: readonly Error[] = [],
  ) {
    const c = cleanup.length ? `; clean-up failed too: ${cleanup.map((e) => e.message).join('; ')}` : '';
    super(`container "${containerId}": ${failures.map((e) => e.message).join('; ')}${c}`);
  }
}

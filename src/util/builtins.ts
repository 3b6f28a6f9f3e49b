/**
 * The Node built-ins the CNI plugin path uses, taken with `process.getBuiltinModule` (Node
 * >= 20.16) rather than `import … from 'node:fs'`. An ESM import of a built-in builds a module
 * facade that reads every export — for node:fs that runs its lazy getters and loads the whole
 * streams stack, about 2.5 ms of a plugin start-up that is paid per pod. Older Node falls back to
 * the import.
 */
export const fs: typeof import('node:fs') = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'));
export const os: typeof import('node:os') = process.getBuiltinModule?.('node:os') ?? (await import('node:os'));
export const path: typeof import('node:path') = process.getBuiltinModule?.('node:path') ?? (await import('node:path'));

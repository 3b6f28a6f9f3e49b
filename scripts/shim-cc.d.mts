/** The C compiler for podipam's static executables: $CC, else `musl-gcc` when on PATH, else `cc` (shim-cc.mjs). */
export function staticCc(): string;

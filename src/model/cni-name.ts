/**
 * Network names and container ids, as CNI validates them (libcni `cniValidNameChars`): letters,
 * digits, "_", "." and "-", not starting with a punctuation mark, no length limit of their own
 * (the handle they make is at most MAX_HANDLE_LENGTH, handle-id.ts). The plugin, the runtime
 * and the API check both with this one pattern.
 */
export const CNI_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

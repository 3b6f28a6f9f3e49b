import type { Command } from 'commander';

/** Registers `podipam serve …` (in progress). */
export function registerServe(_program: Command): void {}

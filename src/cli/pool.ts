import type { Command } from 'commander';

/** Registers `podipam pool …` (in progress). */
export function registerPool(_program: Command): void {}

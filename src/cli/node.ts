import type { Command } from 'commander';

/** Registers `podipam node …` (in progress). */
export function registerNode(_program: Command): void {}

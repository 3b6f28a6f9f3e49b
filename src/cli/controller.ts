import type { Command } from 'commander';

/** Registers `podipam controller …` (in progress). */
export function registerController(_program: Command): void {}

import type { Command } from 'commander';

/** Registers `podipam ipam …` (in progress). */
export function registerIpam(_program: Command): void {}

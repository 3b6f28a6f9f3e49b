/**
 * The command-line reference (docs/cli.md) from the command definitions themselves: every
 * visible command, depth first in registration order, with its usage, description, arguments
 * and options (flags, help text, default). Pure: a `Command` tree in, Markdown out; the same tree
 * always gives the same text, so a test can compare the checked-in page with it
 * (`npm run docs:cli` rewrites it).
 */
import type { Command, Option } from 'commander';

function isHidden(c: Command): boolean {
  return (c as unknown as { _hidden?: boolean })._hidden === true;
}

function visible(c: Command): Command[] {
  return c.commands.filter((s) => !isHidden(s));
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
}

function defaultOf(o: Option): string {
  if (o.defaultValue === undefined || o.defaultValue === false) return '';
  const shown = o.defaultValueDescription ?? JSON.stringify(o.defaultValue);
  return `\`${shown}\``;
}

function section(c: Command, path: string[], out: string[]): void {
  const name = ['podipam', ...path].join(' ');
  const args = c.registeredArguments.map((a) => {
    const word = `${a.name()}${a.variadic ? '...' : ''}`;
    return a.required ? `<${word}>` : `[${word}]`;
  });
  const subs = visible(c);
  out.push(`## ${name}`, '');
  if (c.description() !== '') out.push(c.description(), '');
  const usage = subs.length > 0 && c.options.length === 0 ? `${name} <command>` : [name, ...(c.options.length > 0 ? ['[options]'] : []), ...args].join(' ');
  out.push('```', usage, '```', '');
  if (args.length > 0) {
    out.push('| argument | meaning |', '|---|---|');
    for (const a of c.registeredArguments) out.push(`| \`${a.name()}\` | ${cell(a.description)} |`);
    out.push('');
  }
  const options = c.options.filter((o) => !o.hidden);
  if (options.length > 0) {
    out.push('| option | meaning | default |', '|---|---|---|');
    for (const o of options) out.push(`| \`${cell(o.flags)}\` | ${cell(o.description)} | ${defaultOf(o)} |`);
    out.push('');
  }
  if (subs.length > 0) {
    out.push(`Commands: ${subs.map((s) => `[\`${s.name()}\`](#${anchorOf([...path, s.name()])})`).join(', ')}.`, '');
  }
  for (const s of subs) section(s, [...path, s.name()], out);
}

/** The heading anchor of `podipam <path…>` as GitHub renders it. */
export function anchorOf(path: readonly string[]): string {
  return ['podipam', ...path].join('-').toLowerCase();
}

/** docs/cli.md for `program` (the root `podipam` command). */
export function cliReference(program: Command): string {
  const out: string[] = [
    '# Command-line reference',
    '',
    '<!-- Generated from the command definitions (src/cli/) by `npm run docs:cli`; do not edit. -->',
    '',
    'Every command of `podipam`, with its options. The task pages say when to use which:',
    '[README.md](README.md). Options of the root command (`--datastore`, `--log-level`,',
    '`--log-format`) apply to every command.',
    '',
  ];
  const top = visible(program);
  out.push(`Commands: ${top.map((s) => `[\`${s.name()}\`](#${anchorOf([s.name()])})`).join(', ')}.`, '');
  const options = program.options.filter((o) => !o.hidden);
  out.push('## podipam', '', program.description(), '', '| option | meaning | default |', '|---|---|---|');
  for (const o of options) out.push(`| \`${cell(o.flags)}\` | ${cell(o.description)} | ${defaultOf(o)} |`);
  out.push('');
  for (const s of top) section(s, [s.name()], out);
  return `${out.join('\n').replace(/\n+$/, '')}\n`;
}

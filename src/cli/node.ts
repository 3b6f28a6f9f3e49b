import type { Command } from 'commander';
import { openCommandStore, type StoreAccess } from './datastore-url.js';
import { outputFormat, printData, printTable, withOutputOptions } from './output.js';
import { UsageError } from './usage-error.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Opens the command's datastore (a `read` creates none), runs `fn`, closes it whatever happens. */
async function withStore<T>(cmd: Command, fn: (store: import('../store/index.js').Store) => Promise<T>, access: StoreAccess = 'write'): Promise<T> {
  const store = await openCommandStore(cmd, access);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Bad names and labels are usage errors (exit 2), named with their value. */
function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof TypeError) throw new UsageError(e.message, { cause: e });
    throw e;
  }
}

/**
 * Registers `podipam node add|delete|list`: node records in the datastore. `add` only writes
 * the record; a running `podipam controller` gives it its pod CIDRs. `delete` removes the
 * record and the claims of its CIDRs in one transaction (the CIDRs are free at once).
 */
export function registerNode(program: Command): void {
  const node = program.command('node').description('node records: register, delete and list nodes (pod CIDRs come from `podipam controller`)');

  node
    .command('add')
    .description('register a node (its pod CIDRs are assigned by the running controller)')
    .argument('<name>', 'node name (a DNS subdomain, as Kubernetes node names)')
    .option('--label <key=value>', 'a label (repeatable)', collect, [] as string[])
    .action(async (name: string, opts: { label: string[] }, cmd: Command) => {
      const { validateNodeName } = await import('../model/node-name.js');
      const { parseNodeLabels } = await import('../model/node-labels.js');
      const labels = usage(() => {
        validateNodeName(name);
        return parseNodeLabels(opts.label);
      });
      const { addNode } = await import('../controller/add-node.js');
      await withStore(cmd, (store) => addNode(store, { name, labels }));
      process.stdout.write(`node "${name}" added\n`);
    });

  node
    .command('delete')
    .description("delete a node and free its pod CIDRs; cluster GC then frees its pods' addresses and blocks after its grace period")
    .argument('<name>', 'node name')
    .option('--gone', 'the node has no record (it only claimed blocks) and is gone: record that, so cluster GC frees its blocks')
    .action(async (name: string, opts: { gone?: boolean }, cmd: Command) => {
      const { validateNodeName } = await import('../model/node-name.js');
      usage(() => validateNodeName(name));
      const { deleteNode, recordNodeGone } = await import('../controller/delete-node.js');
      const rec = await withStore(cmd, (store) => (opts.gone ? recordNodeGone(store, name, { by: 'cli' }) : deleteNode(store, name, { by: 'cli' })));
      if (!rec) return void process.stdout.write(`node "${name}" had no record; recorded as deleted\n`);
      const freed = rec.podCIDRs.length ? ` (freed ${rec.podCIDRs.join(', ')})` : '';
      process.stdout.write(`node "${name}" deleted${freed}\n`);
    });

  withOutputOptions(node.command('list').description('list nodes with their pod CIDRs'), '{"items": [node record…]}').action(
    async (opts: { json?: boolean; output?: string }, cmd: Command) => {
      const format = outputFormat(opts);
      const { listNodes } = await import('../controller/list-nodes.js');
      const bad: string[] = [];
      const nodes = await withStore(cmd, (store) => listNodes(store, (key, e) => bad.push(`${key}: ${e.message}`)), 'read');
      for (const b of bad) process.stderr.write(`podipam: skipping unreadable record ${b}\n`);
      const items = nodes.map((n) => n.record);
      if (printData(format, { items })) return;
      // -o wide: the table already has every field of a node record.
      printTable(items, [
        { header: 'NAME', value: (r) => r.name + (r.deleting ? ' (deleting)' : '') },
        { header: 'POD CIDRS', value: (r) => r.podCIDRs.join(',') || '<pending>' },
        {
          header: 'LABELS',
          value: (r) =>
            Object.entries(r.labels)
              .map(([k, v]) => `${k}=${v}`)
              .join(',') || undefined,
        },
        { header: 'CREATED', value: (r) => r.createdAt },
      ]);
    },
  );
}

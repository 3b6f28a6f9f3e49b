// A node:test reporter for scripts/test.mjs: one JSON line per finished test (suites left out),
// { outcome: 'pass' | 'fail' | 'skip', name, file, reason }. A todo test counts as a skip: it
// proves nothing either. Each top-level test or suite also gives { time: ms, file }: a file's
// tests run one after another, so their sum is the file's time (scripts/test.mjs prints the
// slowest files).
export default async function* countReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const d = event.data;
    if (d.nesting === 0 && typeof d.details?.duration_ms === 'number') yield `${JSON.stringify({ time: d.details.duration_ms, file: d.file })}\n`;
    if (d.details?.type === 'suite') continue;
    const skipped = d.skip !== undefined && d.skip !== false ? d.skip : d.todo !== undefined && d.todo !== false ? d.todo : undefined;
    const outcome = event.type === 'test:fail' ? 'fail' : skipped !== undefined ? 'skip' : 'pass';
    const reason = skipped === true ? (d.todo ? 'todo' : 'skipped') : skipped;
    yield `${JSON.stringify({ outcome, name: d.name, file: d.file, reason })}\n`;
  }
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, parseLogOptions, textLine, type Log } from './logger.js';

function capture(format: 'text' | 'json', level: 'info' | 'warn' = 'info') {
  const lines: string[] = [];
  const logger = createLogger({ level, format, component: 'serve', destination: { write: (s: string) => lines.push(s) } });
  return { logger, lines };
}

test('createLogger json: every line has time, level, component and the ids given', () => {
  const { logger, lines } = capture('json');
  logger.child({ component: 'controller' }).info({ node: 'node-a', pool: 'v4' }, 'assigned');
  assert.equal(lines.length, 1);
  const r = JSON.parse(lines[0]!);
  assert.match(r.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(r.level, 'info');
  assert.equal(r.component, 'controller');
  assert.equal(r.node, 'node-a');
  assert.equal(r.pool, 'v4');
  assert.equal(r.msg, 'assigned');
});

test('createLogger text: time, LEVEL, component, message, ids first as key=value', () => {
  const { logger, lines } = capture('text');
  logger.warn({ handle: 'net.c1.eth0', node: 'b', extra: 'a b' }, 'leak released');
  assert.match(lines[0]!, /^\d{4}-\d\d-\d\dT[0-9:.]+Z WARN {2}serve leak released node=b handle=net\.c1\.eth0 extra="a b"\n$/);
});

test('createLogger drops lines below the level', () => {
  const { logger, lines } = capture('json', 'warn');
  logger.info('quiet');
  logger.error('loud');
  assert.deepEqual(
    lines.map((l) => JSON.parse(l).msg),
    ['loud'],
  );
});

test("Log on pino: a child names the component, the level is the caller's, fields pass through", () => {
  const { logger, lines } = capture('json');
  const log: Log = logger;
  const gc = log.child({ component: 'gc' });
  gc.warn({}, 'gc run failed (retrying every 60000 ms): store down');
  log.info({ node: 'node-7', podCIDRs: '10.0.7.0/24' }, 'assigned');
  log.info({ pool: 'v4', handle: 'h1' }, 'released');
  gc.info({ handle: 'net:c9:eth0' }, 'released leaked address 10.0.0.5 (block 10.0.0.0/26)');
  const [a, b, c, d] = lines.map((l) => JSON.parse(l));
  assert.deepEqual([d.component, d.handle], ['gc', 'net:c9:eth0']);
  assert.deepEqual([a.component, a.level, a.msg], ['gc', 'warn', 'gc run failed (retrying every 60000 ms): store down']);
  assert.deepEqual([b.component, b.level, b.node, b.podCIDRs], ['serve', 'info', 'node-7', '10.0.7.0/24']);
  assert.deepEqual([c.pool, c.handle], ['v4', 'h1']);
});

test('Log invents no ids from the words of a message', () => {
  for (const format of ['json', 'text'] as const) {
    const { logger, lines } = capture(format);
    const log: Log = logger;
    // The controller's ready line: "node blocks used" in its text is words, not a node=blocks field.
    log.info({}, 'ready: 3 nodes, 2 claims, node blocks used 10.0.0.0/8 2/256');
    log.warn({}, 'skipping pod CIDR "x" of node b: not a CIDR');
    log.info({}, 'released leaked address 10.0.0.5 of missing handle "net.c9.eth0"');
    log.info({}, 'pool v4 deleted');
    for (const line of lines) {
      if (format === 'json') {
        const r = JSON.parse(line);
        assert.deepEqual([r.node, r.handle, r.pool], [undefined, undefined, undefined], line);
      } else assert.doesNotMatch(line, /\b(node|handle|pool)=/, line);
    }
  }
});

test('parseLogOptions names the flag and the value', () => {
  assert.deepEqual(parseLogOptions('debug', 'json'), { level: 'debug', format: 'json' });
  assert.throws(() => parseLogOptions('loud', 'json'), /--log-level "loud"/);
  assert.throws(() => parseLogOptions('info', 'xml'), /--log-format "xml"/);
  assert.equal(textLine('not json'), 'not json');
});

test('a pino Logger is a Log; recordingLog keeps lines with child bindings merged; silentLog drops them', async () => {
  const { recordingLog, silentLog } = await import('./logger.js');
  const { logger, lines } = capture('json');
  const asLog: import('./logger.js').Log = logger;
  asLog.child({ node: 'n1' }).warn({ pool: 'p' }, 'low');
  assert.equal(JSON.parse(lines[0]!).node, 'n1');
  const r = recordingLog();
  r.child({ component: 'warm' }).child({ node: 'a' }).info({ handle: 'h' }, 'took');
  assert.deepEqual(r.records, [{ level: 'info', msg: 'took', fields: { component: 'warm', node: 'a', handle: 'h' } }]);
  silentLog.child({}).error({}, 'nothing');
});

test('no log line carries a raw control character, in either format', () => {
  for (const format of ['json', 'text'] as const) {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', format, component: 'agent', destination: { write: (s: string) => lines.push(s) } });
    logger.info({ pod: 'web\u001b]0;x\u0007', note: 'a\u009bb', plain: 'ok' }, 'ADD of web\u001b[2J\u0085');
    const line = lines.join('');
    // eslint-disable-next-line no-control-regex
    const rawControl = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
    assert.ok(!rawControl.test(line.slice(0, -1)) && !line.slice(0, -1).includes('\n'), `${format}: ${JSON.stringify(line)}`);
    if (format === 'json') {
      const r = JSON.parse(line) as Record<string, unknown>;
      assert.equal(r.note, 'a\u009bb');
      assert.equal(r.msg, 'ADD of web\u001b[2J\u0085');
    } else {
      assert.match(line, /INFO {2}agent "ADD of web\\u001b\[2J\\u0085" pod="web\\u001b\]0;x\\u0007" note="a\\u009bb" plain=ok\n$/);
    }
  }
});

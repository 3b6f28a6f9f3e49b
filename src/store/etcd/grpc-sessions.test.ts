import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { GrpcSessions } from './grpc-sessions.js';
import { HttpPostError } from './http-post.js';

/** An h2c server whose answer to each path `answer` decides (undefined: never answers). */
async function server(answer: (path: string, stream: ServerHttp2Stream) => void): Promise<{ endpoint: string; srv: Http2Server }> {
  const srv = createServer();
  srv.on('stream', (stream, headers) => {
    stream.on('data', () => undefined);
    stream.on('error', () => undefined);
    answer(String(headers[':path']), stream);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { endpoint: `127.0.0.1:${(srv.address() as { port: number }).port}`, srv };
}

/** Opens a stream on `endpoint`, reads it to its end and 20 ms past it: its messages as text and every end reported. */
async function readStream(g: GrpcSessions, endpoint: string): Promise<{ got: string[]; ends: unknown[] }> {
  const got: string[] = [];
  const ends: unknown[] = [];
  let ended: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (ended = resolve));
  const opened = await g.stream(
    endpoint,
    '/t.S/W',
    Buffer.from('req'),
    2000,
    {},
    (m) => got.push(m.toString()),
    (end) => {
      ends.push(end);
      ended();
    },
  );
  assert.ok('stream' in opened);
  await done;
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { got, ends };
}

const grpcOk = (stream: ServerHttp2Stream, body: Buffer): void => {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  const frame = Buffer.alloc(5);
  frame.writeUInt32BE(body.length, 1);
  stream.end(Buffer.concat([frame, body]));
};

test('a call that times out cancels its own stream only: other calls on the shared session still get their answers', async () => {
  const { endpoint, srv } = await server((path, stream) => {
    if (path === '/t.S/Fast') setTimeout(() => grpcOk(stream, Buffer.from('ok')), 300);
  });
  const g = new GrpcSessions(undefined);
  try {
    const slow = g.call(endpoint, '/t.S/Slow', Buffer.alloc(0), 100);
    const fast = g.call(endpoint, '/t.S/Fast', Buffer.alloc(0), 2000);
    await assert.rejects(slow, (e: unknown) => e instanceof HttpPostError && /did not answer within 100 ms/.test(e.message) && e.connected);
    const answer = await fast;
    assert.equal(answer.code, 0);
    assert.equal(answer.body.toString(), 'ok');
  } finally {
    g.close();
    srv.close();
  }
});

test('a gRPC error status is an answer (code and decoded message), an HTTP error status is one with no gRPC code', async () => {
  const { endpoint, srv } = await server((path, stream) => {
    if (path === '/t.S/Refused')
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '3', 'grpc-message': 'bad%20key' }, { endStream: true });
    else {
      stream.respond({ ':status': 404 });
      stream.end('nope');
    }
  });
  const g = new GrpcSessions(undefined);
  try {
    assert.deepEqual(await g.call(endpoint, '/t.S/Refused', Buffer.alloc(0), 2000), { code: 3, http: 200, message: 'bad key', body: Buffer.alloc(0) });
    assert.deepEqual(await g.call(endpoint, '/t.S/Other', Buffer.alloc(0), 2000), { code: undefined, http: 404, message: 'nope', body: Buffer.alloc(0) });
  } finally {
    g.close();
    srv.close();
  }
});

test('nothing listening: HttpPostError not connected (the request never left), with the cause named', async () => {
  const { endpoint, srv } = await server(() => undefined);
  await new Promise((resolve) => srv.close(resolve));
  const g = new GrpcSessions(undefined);
  try {
    await assert.rejects(
      g.call(endpoint, '/t.S/M', Buffer.alloc(0), 2000),
      (e: unknown) => e instanceof HttpPostError && !e.connected && /ECONNREFUSED/.test(e.message),
    );
  } finally {
    g.close();
  }
});

test('a call that times out before its session connected drops the session: the next call dials again', async () => {
  // Accepts TCP connections and never says a word: a TLS handshake that never completes.
  const sockets: Socket[] = [];
  const srv = createTcpServer((sock) => {
    sockets.push(sock);
    sock.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const endpoint = `127.0.0.1:${(srv.address() as { port: number }).port}`;
  const g = new GrpcSessions({ servername: 'etcd.test' });
  try {
    for (let i = 1; i <= 2; i++)
      await assert.rejects(
        g.call(endpoint, '/t.S/M', Buffer.alloc(0), 150),
        (e: unknown) => e instanceof HttpPostError && !e.connected && /did not answer within 150 ms \(not connected\)/.test(e.message),
      );
    assert.equal(sockets.length, 2, 'the second call opened a connection of its own');
  } finally {
    g.close();
    for (const sock of sockets) sock.destroy();
    srv.close();
  }
});

test('a session dropped while its connection completes: its late connect event is ignored (no throw on the destroyed session)', async () => {
  const { endpoint, srv } = await server(() => undefined);
  const g = new GrpcSessions(undefined);
  // Closes the sessions from inside the socket's own connect event, before HTTP/2 sets the
  // session up: node then still emits the session's 'connect', on a destroyed session.
  const onSocket = (message: unknown): void => {
    const { socket } = message as { socket: Socket };
    socket.once('connect', () => g.close());
  };
  subscribe('net.client.socket', onSocket);
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown): void => void uncaught.push(e);
  process.prependListener('uncaughtException', onUncaught);
  try {
    await assert.rejects(g.call(endpoint, '/t.S/M', Buffer.alloc(0), 2000), (e: unknown) => e instanceof HttpPostError);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(uncaught.map(String), []);
  } finally {
    unsubscribe('net.client.socket', onSocket);
    process.removeListener('uncaughtException', onUncaught);
    g.close();
    srv.close();
  }
});

test('a call or stream node refuses to start (a header name it does not take) rejects with HttpPostError, and no timer fires later', async () => {
  const { endpoint, srv } = await server(() => undefined);
  const g = new GrpcSessions(undefined);
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown): void => void uncaught.push(e);
  process.prependListener('uncaughtException', onUncaught);
  try {
    const bad = { 'bad header': 'x' };
    await assert.rejects(
      g.call(endpoint, '/t.S/M', Buffer.alloc(0), 50, bad),
      (e: unknown) => e instanceof HttpPostError && /could not start the call/.test(e.message),
    );
    await assert.rejects(
      g.stream(
        endpoint,
        '/t.S/W',
        Buffer.alloc(0),
        50,
        bad,
        () => undefined,
        () => undefined,
      ),
      (e: unknown) => e instanceof HttpPostError && /could not start the call/.test(e.message),
    );
    await new Promise((resolve) => setTimeout(resolve, 150)); // past both timeouts
    assert.deepEqual(uncaught.map(String), []);
  } finally {
    process.removeListener('uncaughtException', onUncaught);
    g.close();
    srv.close();
  }
});

test('after close(), calls and streams are refused without dialing', async () => {
  const { endpoint, srv } = await server(() => undefined);
  let sessions = 0;
  srv.on('session', () => sessions++);
  const g = new GrpcSessions(undefined);
  g.close();
  try {
    await assert.rejects(
      g.call(endpoint, '/t.S/M', Buffer.alloc(0), 500),
      (e: unknown) => e instanceof HttpPostError && !e.connected && /closed/.test(e.message),
    );
    await assert.rejects(
      g.stream(
        endpoint,
        '/t.S/W',
        Buffer.alloc(0),
        500,
        {},
        () => undefined,
        () => undefined,
      ),
      (e: unknown) => e instanceof HttpPostError && !e.connected && /closed/.test(e.message),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(sessions, 0);
  } finally {
    srv.close();
  }
});

test('a stream: its messages as they come, split or joined across DATA frames, then one end with the status', { timeout: 5000 }, async () => {
  const frame = (body: string): Buffer => {
    const f = Buffer.alloc(5 + body.length);
    f.writeUInt32BE(body.length, 1);
    f.write(body, 5);
    return f;
  };
  const { endpoint, srv } = await server((_path, stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '14', 'grpc-message': 'going%20away' }));
    const all = Buffer.concat([frame('one'), frame('two'), frame('three')]);
    stream.write(all.subarray(0, 3)); // a frame header split across chunks
    setTimeout(() => stream.write(all.subarray(3, 14)), 20);
    setTimeout(() => stream.end(all.subarray(14)), 40);
  });
  const g = new GrpcSessions(undefined);
  try {
    const { got, ends } = await readStream(g, endpoint);
    assert.deepEqual(got, ['one', 'two', 'three']);
    assert.deepEqual(ends, [{ code: 14, message: 'going away' }]);
  } finally {
    g.close();
    srv.close();
  }
});

test('a stream whose answer ends inside a message ends without a status (the cut message is not delivered)', { timeout: 5000 }, async () => {
  const { endpoint, srv } = await server((_path, stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    const f = Buffer.alloc(5 + 3);
    f.writeUInt32BE(3, 1);
    f.write('one', 5);
    const cut = Buffer.alloc(5 + 2);
    cut.writeUInt32BE(10, 1); // says 10 bytes, 2 come
    stream.end(Buffer.concat([f, cut]));
  });
  const g = new GrpcSessions(undefined);
  try {
    const { got, ends } = await readStream(g, endpoint);
    assert.deepEqual(got, ['one']);
    assert.deepEqual(ends, [{ code: undefined, message: 'the answer ended inside a gRPC message (status 0)' }]);
  } finally {
    g.close();
    srv.close();
  }
});

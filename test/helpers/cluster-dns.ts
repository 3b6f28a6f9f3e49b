/**
 * The cluster DNS double (what kube-dns/CoreDNS answers pods): a UDP DNS server on
 * `address:53` with A records for the names given (exact, fully qualified without the final
 * dot, e.g. `podipam-etcd.podipam-system.svc.cluster.local`). A known name answers its
 * addresses for A and nothing (NOERROR) for other types; any other name is NXDOMAIN, so a
 * resolver walks its search list as it does against the real one. Queries are counted.
 */
import { createSocket } from 'node:dgram';

export interface ClusterDns {
  readonly address: string;
  /** Queries answered, by name. */
  readonly queries: Map<string, number>;
  set(name: string, ipv4: readonly string[]): void;
  close(): Promise<void>;
}

function readName(msg: Buffer, at: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = at;
  for (let n = 0; n < 128; n++) {
    const len = msg[i];
    if (len === undefined) throw new Error('truncated name');
    if (len === 0) return { name: labels.join('.').toLowerCase(), end: i + 1 };
    if (len > 63) throw new Error('compressed names are not expected in a question');
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('latin1'));
    i += 1 + len;
  }
  throw new Error('name too long');
}

/** Starts the server on `address` (a local address; port 53, as resolv.conf cannot name another). */
export async function startClusterDns(address: string): Promise<ClusterDns> {
  const records = new Map<string, string[]>();
  const queries = new Map<string, number>();
  const sock = createSocket('udp4');
  sock.on('message', (msg, from) => {
    try {
      if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return;
      const { name, end } = readName(msg, 12);
      const qtype = msg.readUInt16BE(end);
      queries.set(name, (queries.get(name) ?? 0) + 1);
      const question = msg.subarray(12, end + 4);
      const ips = records.get(name);
      const answers = ips !== undefined && qtype === 1 ? ips : [];
      const head = Buffer.alloc(12);
      head.writeUInt16BE(msg.readUInt16BE(0), 0);
      head.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | (ips === undefined ? 3 : 0), 2);
      head.writeUInt16BE(1, 4);
      head.writeUInt16BE(answers.length, 6);
      const rrs = answers.map((ip) => {
        const rr = Buffer.alloc(16);
        rr.writeUInt16BE(0xc00c, 0);
        rr.writeUInt16BE(1, 2);
        rr.writeUInt16BE(1, 4);
        rr.writeUInt32BE(5, 6);
        rr.writeUInt16BE(4, 10);
        ip.split('.').forEach((o, k) => rr.writeUInt8(Number(o), 12 + k));
        return rr;
      });
      sock.send(Buffer.concat([head, question, ...rrs]), from.port, from.address);
    } catch {
      // a malformed query gets no answer
    }
  });
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(53, address, () => {
      sock.off('error', reject);
      resolve();
    });
  });
  return {
    address,
    queries,
    set: (name, ipv4) => void records.set(name.toLowerCase().replace(/\.$/, ''), [...ipv4]),
    close: () => new Promise<void>((resolve) => sock.close(() => resolve())),
  };
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * One call the bench receiver got: its webhook-id, the message text (the bench's key; a phone call's,
 * which has none when it comes in, is its call SID) and when.
 */
export interface Receipt {
  webhookId: string;
  text: string;
  createdAt: string;
  atMs: number;
}

/**
 * A business's endpoint on loopback for the benchmarks: answers 200 at once, keeps one receipt per
 * call (duplicates included), and verifies signatures of a sample with the standardwebhooks package.
 */
export class BenchReceiver {
  readonly receipts: Receipt[] = [];
  secret: string | undefined;
  verified = 0;
  badSignatures = 0;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<BenchReceiver> {
    const server = createServer({ keepAliveTimeout: 30_000 });
    const receiver = new BenchReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const atMs = performance.timeOrigin + performance.now();
        const body = Buffer.concat(chunks).toString('utf8');
        const webhookId = String(req.headers['webhook-id']);
        const payload = JSON.parse(body).payload as {
          text: string;
          createdAt: string;
          metadata?: { call_sid?: string };
        };
        const text = payload.text || (payload.metadata?.call_sid ?? '');
        receiver.receipts.push({ webhookId, text, createdAt: payload.createdAt, atMs });
        // Verifying every call costs the receiver more than the service; one in 50 shows the scheme holds.
        if (receiver.secret && receiver.receipts.length % 50 === 1) {
          try {
            new Webhook(receiver.secret).verify(body, req.headers as Record<string, string>);
            receiver.verified++;
          } catch {
            receiver.badSignatures++;
          }
        }
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** p-th percentile (0-100) of values, nearest rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

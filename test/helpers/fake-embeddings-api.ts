import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

// A fake OpenAI-compatible embeddings API on loopback: POST /v1/embeddings {model, input} answered
// {object: "list", data: [{object: "embedding", index: 0, embedding}], model, usage}, or an
// OpenAI error body. The vector is derived from the input, so equal texts get equal vectors.

export interface FakeEmbeddingsApi {
  /** e.g. http://127.0.0.1:41234/v1 (use as EMBEDDINGS_URL). */
  url: string;
  requests: { headers: IncomingHttpHeaders; body: { model?: string; input?: string } }[];
  /** Answer the next `count` calls with this HTTP status and an OpenAI error body. */
  failNext(count: number, status: number): void;
  /** Answer the next call with this status and these exact bytes (a faulty or hostile endpoint). */
  answerNext(status: number, body: string | Buffer): void;
  close(): Promise<void>;
}

/** The vector the fake answers for a text: 8 numbers from its SHA-256. */
export function fakeVector(text: string): number[] {
  const digest = createHash('sha256').update(text).digest();
  return Array.from({ length: 8 }, (_, i) => digest.readUInt16BE(i * 2) / 65536);
}

export async function startFakeEmbeddingsApi(): Promise<FakeEmbeddingsApi> {
  const requests: FakeEmbeddingsApi['requests'] = [];
  const failures: number[] = [];
  const raw: { status: number; body: string | Buffer }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { model?: string; input?: string };
      requests.push({ headers: req.headers, body });
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (req.method !== 'POST' || req.url !== '/v1/embeddings')
        return answer(404, { error: { message: 'not found', type: 'invalid_request_error' } });
      const next = raw.shift();
      if (next) {
        res.writeHead(next.status, { 'content-type': 'application/json' });
        return void res.end(next.body);
      }
      const failure = failures.shift();
      if (failure !== undefined)
        return answer(failure, {
          error: { message: `failure ${failure}`, type: failure === 429 ? 'rate_limit_exceeded' : 'server_error' },
        });
      if (typeof body.input !== 'string' || !body.model)
        return answer(400, { error: { message: 'input and model are required', type: 'invalid_request_error' } });
      answer(200, {
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding: fakeVector(body.input) }],
        model: body.model,
        usage: { prompt_tokens: body.input.length, total_tokens: body.input.length },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    failNext: (count, status) => failures.push(...Array.from({ length: count }, () => status)),
    answerNext: (status, body) => raw.push({ status, body }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

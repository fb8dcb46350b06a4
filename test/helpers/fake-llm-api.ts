import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakeVector } from './fake-embeddings-api.ts';

// A scripted OpenAI-compatible API on loopback: POST /v1/chat/completions answered in OpenAI's
// `chat.completion` shape (a text, or tool calls), or an OpenAI error body; POST /v1/embeddings as
// fake-embeddings-api.ts answers; POST /v1/audio/transcriptions as OpenAI's speech to text does
// (multipart `file` and `model`, answered `{text}`). Tests queue answers (script) or set the default
// one (reply).

/** A chat message as the client sends it. */
export interface SentMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatRequest {
  headers: IncomingHttpHeaders;
  body: {
    model?: string;
    messages?: SentMessage[];
    tools?: { type: string; function: { name: string; description: string; parameters: Record<string, any> } }[];
    max_tokens?: number;
    temperature?: number;
  };
}

/** One answer of the fake. */
export type LlmAnswer =
  | { text: string; usage?: { prompt_tokens: number; completion_tokens: number } }
  | { toolCalls: { name: string; arguments: unknown }[] }
  | { status: number; message?: string }
  /** Wait for `until` before answering `then`. */
  | { hold: Promise<unknown>; then: LlmAnswer }
  /** Drop the connection without answering. */
  | { destroy: true };

/** A transcription request as the fake read its multipart body. */
export interface TranscriptionRequest {
  model: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

export interface FakeLlmApi {
  /** e.g. http://127.0.0.1:41234/v1 (use as LLM_URL). */
  url: string;
  /** Chat-completion requests, in arrival order. */
  requests: ChatRequest[];
  /** Answers for the next requests, in order; after them, `reply`. */
  script(...answers: LlmAnswer[]): void;
  /**
   * Answers for the next requests whose customer's last message is `text`, before the queue of
   * `script`: what another run asks meanwhile (a sentiment analysis of an earlier conversation,
   * say) does not take them.
   */
  scriptFor(text: string, ...answers: LlmAnswer[]): void;
  /** The answer when no scripted one is left (default: "Reply to: <the last user message>"). */
  reply: (request: ChatRequest) => LlmAnswer;
  /** Embeddings answered for these texts (an item's embedding text, a query); others get fakeVector's. */
  vectors: Map<string, number[]>;
  /** The texts embedded, in arrival order. */
  embedded: string[];
  /** Transcription requests, in arrival order. */
  transcriptions: TranscriptionRequest[];
  /** The text a transcription answers (default: "Transcript of <filename>, <size> bytes"). */
  transcript: (request: TranscriptionRequest) => string;
  /** Resolves when at least `count` chat requests arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ChatRequest[]>;
  close(): Promise<void>;
}

/** The last message the customer wrote in a request. */
export const lastUserText = (request: ChatRequest) =>
  [...(request.body.messages ?? [])].reverse().find((m) => m.role === 'user')?.content ?? '';

export async function startFakeLlmApi(): Promise<FakeLlmApi> {
  const requests: ChatRequest[] = [];
  const queue: LlmAnswer[] = [];
  const queuesFor = new Map<string, LlmAnswer[]>();
  const open = new Set<ServerResponse>();
  let calls = 0;
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const api: FakeLlmApi = {
    url: '',
    requests,
    script: (...answers) => queue.push(...answers),
    scriptFor: (text, ...answers) => queuesFor.set(text, [...(queuesFor.get(text) ?? []), ...answers]),
    reply: (request) => ({ text: `Reply to: ${lastUserText(request)}` }),
    vectors: new Map(),
    embedded: [],
    transcriptions: [],
    transcript: (request) => `Transcript of ${request.filename}, ${request.bytes.length} bytes`,
    async waitForRequests(count, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > end) throw new Error(`the model waited for ${count} requests, got ${requests.length}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return requests;
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  async function answer(res: ServerResponse, request: ChatRequest, given: LlmAnswer): Promise<void> {
    if ('hold' in given) {
      await given.hold;
      return answer(res, request, given.then);
    }
    if ('destroy' in given) return void res.socket?.destroy();
    if ('status' in given)
      // retry-after-ms as OpenAI sends it: the client's retries come at once instead of after seconds.
      return json(
        res,
        given.status,
        { error: { message: given.message ?? `failure ${given.status}`, type: 'server_error', code: null } },
        { 'retry-after-ms': '10' },
      );
    calls += 1;
    const model = request.body.model ?? 'unknown';
    const message =
      'text' in given
        ? { role: 'assistant', content: given.text }
        : {
            role: 'assistant',
            content: null,
            tool_calls: given.toolCalls.map((c, i) => ({
              id: `call_${calls}_${i}`,
              type: 'function',
              // A string is sent as it is (arguments that are not JSON).
              function: {
                name: c.name,
                arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
              },
            })),
          };
    const usage =
      'text' in given && given.usage
        ? given.usage
        : { prompt_tokens: JSON.stringify(request.body.messages ?? []).length, completion_tokens: 7 };
    json(res, 200, {
      id: `chatcmpl-${calls}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, finish_reason: 'text' in given ? 'stop' : 'tool_calls', logprobs: null }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    });
  }

  /** OpenAI's speech to text: a multipart form with the audio `file` and the `model`; `{text}` back. */
  async function transcribe(res: ServerResponse, contentType: string, raw: Buffer): Promise<void> {
    const body = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength) as ArrayBuffer;
    const form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
    const file = form.get('file');
    const model = form.get('model');
    if (!(file instanceof File) || typeof model !== 'string')
      return json(res, 400, { error: { message: 'file and model are required', type: 'invalid_request_error' } });
    const request = {
      model,
      filename: file.name,
      contentType: file.type,
      bytes: Buffer.from(await file.arrayBuffer()),
    };
    api.transcriptions.push(request);
    json(res, 200, { text: api.transcript(request) });
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/audio/transcriptions')
        return void transcribe(res, req.headers['content-type'] ?? '', Buffer.concat(chunks)).catch(() =>
          json(res, 400, { error: { message: 'malformed multipart body', type: 'invalid_request_error' } }),
        );
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as ChatRequest['body'] & {
        input?: string;
      };
      if (req.method === 'POST' && req.url === '/v1/embeddings') {
        const input = String(body.input);
        api.embedded.push(input);
        return json(res, 200, {
          object: 'list',
          data: [{ object: 'embedding', index: 0, embedding: api.vectors.get(input) ?? fakeVector(input) }],
          model: body.model,
          usage: { prompt_tokens: 1, total_tokens: 1 },
        });
      }
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
        return json(res, 404, { error: { message: 'not found', type: 'invalid_request_error' } });
      const request = { headers: req.headers, body };
      requests.push(request);
      open.add(res);
      res.on('close', () => open.delete(res));
      void answer(res, request, queuesFor.get(lastUserText(request))?.shift() ?? queue.shift() ?? api.reply(request));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return api;
}

import { request } from 'undici';
import type { EmbeddingsConfig } from '../../config.ts';

/** Computes the embedding of a text (an injected part: the OpenAI-compatible API, or a fake). */
export interface EmbeddingProvider {
  embed(text: string): Promise<{ vector: number[]; model: string }>;
}

/** A failed embedding call, and whether trying again later may succeed. */
export class EmbeddingError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

const TIMEOUT_MS = 30_000;
/** The largest answer read: a 16 384-number vector is some 350 KB of JSON. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
const MAX_DIMENSIONS = 16_384;
/** What a PostgreSQL `real` holds (its smallest subnormal and its largest value). */
const REAL_RANGE = { min: 1.4e-45, max: 3.4028234e38 };

const storableReal = (v: unknown) =>
  typeof v === 'number' && (v === 0 || (Math.abs(v) >= REAL_RANGE.min && Math.abs(v) <= REAL_RANGE.max));

/** The answer's body as text, refused past MAX_ANSWER_BYTES (a faulty endpoint must not fill the worker's memory). */
async function boundedText(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      body.destroy();
      throw new EmbeddingError(`embeddings API answered more than ${MAX_ANSWER_BYTES} bytes`, false);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The embeddings API of OpenAI and of the servers that copy it (Ollama, vLLM, LiteLLM, …):
 * `POST {url}/embeddings` with `{model, input}`, answered `{data: [{embedding: [...]}], model}`.
 * A 429 or 5xx, a timeout or a lost connection may pass on a later try; any other answer will not.
 */
export function openAiEmbeddings(config: EmbeddingsConfig): EmbeddingProvider {
  // Error texts are stored (the outbox's last_error): a gateway that echoes the request must not put the key there.
  const redact = (text: string) => {
    const masked = text.replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
    return config.apiKey ? masked.replaceAll(config.apiKey, '[redacted]') : masked;
  };
  return {
    async embed(text) {
      let response;
      try {
        response = await request(`${config.url}/embeddings`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {}),
          },
          body: JSON.stringify({ model: config.model, input: text }),
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (err) {
        throw new EmbeddingError(`embeddings API unreachable: ${(err as Error).message}`, true);
      }
      let body: string;
      try {
        body = await boundedText(response.body);
      } catch (err) {
        if (err instanceof EmbeddingError) throw err;
        throw new EmbeddingError(`embeddings API answer lost: ${(err as Error).message}`, true);
      }
      if (response.statusCode !== 200) {
        const retryable = response.statusCode === 429 || response.statusCode >= 500;
        throw new EmbeddingError(
          redact(`embeddings API answered ${response.statusCode}: ${body.slice(0, 300)}`),
          retryable,
        );
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        throw new EmbeddingError('embeddings API answered with malformed JSON', true);
      }
      const answer = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as {
        data?: { embedding?: unknown }[];
        model?: unknown;
      };
      const vector = Array.isArray(answer.data) ? answer.data[0]?.embedding : undefined;
      if (
        !Array.isArray(vector) ||
        vector.length === 0 ||
        vector.length > MAX_DIMENSIONS ||
        !vector.every(storableReal)
      ) {
        throw new EmbeddingError('embeddings API answered without a usable embedding', false);
      }
      return {
        vector: vector as number[],
        model: typeof answer.model === 'string' ? answer.model.slice(0, 200) : config.model,
      };
    },
  };
}

/**
 * The text an item's embedding is computed from: its embedding input, one `field: value` line per
 * field in the order given (text as it is, other values as JSON).
 */
export function embeddingText(input: Record<string, unknown>): string {
  return Object.entries(input)
    .map(([field, value]) => `${field}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join('\n');
}

import { request } from 'undici';
import type { EmbeddingsConfig } from '../../config.ts';

/** Computes the embedding of a text (an injected part: the OpenAI-compatible API, or a fake). */
export interface EmbeddingProvider {
  embed(text: string): Promise<{ vector: number[]; model: string }>;
}

/** A failed embedding call, and whether trying again later may succeed. */
export class EmbeddingError extends Error {
  constructor(message: string, readonly retryable: boolean) {
    super(message);
  }
}

const TIMEOUT_MS = 30_000;

/**
 * The embeddings API of OpenAI and of the servers that copy it (Ollama, vLLM, LiteLLM, …):
 * `POST {url}/embeddings` with `{model, input}`, answered `{data: [{embedding: [...]}], model}`.
 * A 429 or 5xx, a timeout or a lost connection may pass on a later try; any other answer will not.
 */
export function openAiEmbeddings(config: EmbeddingsConfig): EmbeddingProvider {
  return {
    async embed(text) {
      let response;
      try {
        response = await request(`${config.url}/embeddings`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {}) },
          body: JSON.stringify({ model: config.model, input: text }),
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (err) {
        throw new EmbeddingError(`embeddings API unreachable: ${(err as Error).message}`, true);
      }
      const body = await response.body.text();
      if (response.statusCode !== 200) {
        const retryable = response.statusCode === 429 || response.statusCode >= 500;
        throw new EmbeddingError(`embeddings API answered ${response.statusCode}: ${body.slice(0, 300)}`, retryable);
      }
      let parsed: { data?: { embedding?: unknown }[]; model?: unknown };
      try {
        parsed = JSON.parse(body);
      } catch {
        throw new EmbeddingError('embeddings API answered with malformed JSON', true);
      }
      const vector = parsed.data?.[0]?.embedding;
      if (!Array.isArray(vector) || vector.length === 0 || !vector.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        throw new EmbeddingError('embeddings API answered without an embedding', false);
      }
      return { vector, model: typeof parsed.model === 'string' ? parsed.model : config.model };
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

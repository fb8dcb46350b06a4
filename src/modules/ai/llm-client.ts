import OpenAI, { toFile } from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { LlmConfig } from '../../config.ts';

export type ChatMessage = ChatCompletionMessageParam;
export type ChatTool = ChatCompletionTool;

/** A tool the model asked to call: its id, name and arguments as the JSON text it wrote. */
export interface ToolCallRequest {
  id: string;
  name: string;
  arguments: string;
}

/** One call of the model, as a run records it. */
export interface ModelCall {
  model: string;
  tokens_in: number | null;
  tokens_out: number | null;
  latency_ms: number;
  /** Why the call failed (after the client's retries); absent when it answered. */
  error?: string;
}

/** What the model answered (a text, tool calls, or both), with the record of the call. */
export interface ModelAnswer {
  text: string;
  toolCalls: ToolCallRequest[];
  call: ModelCall;
}

/** A call that failed after its retries, with its record. */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly call: ModelCall,
  ) {
    super(message);
  }
}

/** The language model the agents answer with (an injected part: the OpenAI-compatible API). */
export interface ChatModel {
  /** The model of agents that name none. */
  readonly defaultModel: string;
  complete(request: {
    model: string;
    messages: ChatMessage[];
    maxTokens?: number;
    temperature?: number;
    /** Offered to the model; none: it can only answer a text. */
    tools?: ChatTool[];
  }): Promise<ModelAnswer>;
}

/** An error's text without the API key, which a gateway may echo: it is stored with the run. */
function redacted(text: string, apiKey: string | undefined): string {
  const masked = text.replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
  return (apiKey ? masked.replaceAll(apiKey, '[redacted]') : masked).slice(0, 1000);
}

/**
 * Any OpenAI-compatible chat-completions API (OpenAI, Azure's compatible endpoint, Ollama, vLLM,
 * LiteLLM, …) through the `openai` client: `POST {LLM_URL}/chat/completions`. The client retries a
 * timeout, a lost connection, 409, 429 and 5xx with backoff, LLM_MAX_RETRIES times; each try is
 * bounded by LLM_TIMEOUT_SECONDS.
 */
export function openAiChatModel(config: LlmConfig): ChatModel {
  // The client needs some key; a local server without authentication ignores it.
  const client = new OpenAI({
    baseURL: config.url,
    apiKey: config.apiKey ?? 'unused',
    timeout: config.timeoutMs,
    maxRetries: config.maxRetries,
  });
  return {
    defaultModel: config.model,
    async complete({ model, messages, maxTokens, temperature, tools }) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        const completion = await client.chat.completions.create({
          model,
          messages,
          ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
          ...(temperature !== undefined ? { temperature } : {}),
          ...(tools && tools.length > 0 ? { tools } : {}),
        });
        const call: ModelCall = {
          model: completion.model || model,
          tokens_in: completion.usage?.prompt_tokens ?? null,
          tokens_out: completion.usage?.completion_tokens ?? null,
          latency_ms: elapsed(),
        };
        const message = completion.choices?.[0]?.message;
        const text = message?.content?.trim() ?? '';
        const toolCalls = (message?.tool_calls ?? []).flatMap((c) =>
          c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [],
        );
        if (text === '' && toolCalls.length === 0)
          throw new ModelError('the model answered no text', { ...call, error: 'empty answer' });
        return { text, toolCalls, call };
      } catch (err) {
        if (err instanceof ModelError) throw err;
        const message = redacted((err as Error).message || String(err), config.apiKey);
        throw new ModelError(message, {
          model,
          tokens_in: null,
          tokens_out: null,
          latency_ms: elapsed(),
          error: message,
        });
      }
    },
  };
}

/** Speech to text (an injected part: the OpenAI-compatible API's transcriptions). */
export interface Transcriber {
  /** The text spoken in an audio file. Throws when the call fails, after the client's retries. */
  transcribe(audio: { bytes: Buffer; filename: string; contentType: string }): Promise<string>;
}

/**
 * The transcriptions of the API at LLM_URL (`POST {LLM_URL}/audio/transcriptions`, multipart, the
 * model LLM_TRANSCRIPTION_MODEL) through the same client as the chat model, with its timeout and retries.
 */
export function openAiTranscriber(config: LlmConfig): Transcriber {
  const client = new OpenAI({
    baseURL: config.url,
    apiKey: config.apiKey ?? 'unused',
    timeout: config.timeoutMs,
    maxRetries: config.maxRetries,
  });
  return {
    async transcribe({ bytes, filename, contentType }) {
      try {
        const file = await toFile(bytes, filename, { type: contentType });
        const result = await client.audio.transcriptions.create({ file, model: config.transcriptionModel });
        return result.text.trim();
      } catch (err) {
        throw new Error(redacted((err as Error).message || String(err), config.apiKey), { cause: err });
      }
    },
  };
}

import type { Dispatcher } from 'undici';

/** How adapters reach the network; injected so tests and benchmarks can point them anywhere. */
export interface ProviderHttpOptions {
  /** undici dispatcher (connection pool, proxy, mock); undici's global agent when absent. */
  dispatcher?: Dispatcher;
  /** Whole-call limit for API calls, in ms (default 15 000). */
  timeoutMs?: number;
  /** Whole-call limit for media downloads, in ms (default 60 000). */
  mediaTimeoutMs?: number;
  /** Largest attachment downloaded, in bytes (default 100 MiB, WhatsApp's document limit). */
  maxMediaBytes?: number;
}

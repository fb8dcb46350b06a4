import type { Dispatcher } from 'undici';

/**
 * How adapters reach the network, given by the core (src/services.ts): an adapter never picks its
 * own connection pool, so the outbound address policy applies to every call that carries a
 * channel's secrets.
 */
export interface ProviderHttpOptions {
  /**
   * undici dispatcher every request of the adapter goes through, URLs the provider hands back
   * (media downloads) included. The one the service passes checks the address of each connection
   * (src/net/ssrf-guard.ts): a refused one rejects the request with SsrfError before anything is
   * sent, and classifyNetworkError calls that final. undici's global agent when absent.
   */
  dispatcher?: Dispatcher;
  /**
   * The address to connect to for a host name a provider is reached at outside HTTP (an SMTP or
   * IMAP server), under the same policy: a literal or resolved address that is not public is
   * refused with SsrfError unless private targets are allowed. The adapter connects to the address
   * answered (naming the host for TLS), so what it checked is what it reaches. The host itself when absent.
   */
  resolveHost?: (host: string) => Promise<string>;
  /**
   * The service's public address (PUBLIC_URL): the base of the callback URLs a provider is told of
   * (delivery status callbacks) and of the URL a provider's signature covers.
   */
  publicUrl?: string;
  /** Whole-call limit for API calls, in ms (default 15 000). */
  timeoutMs?: number;
  /** Whole-call limit for media downloads, in ms (default 60 000). */
  mediaTimeoutMs?: number;
  /** Largest attachment downloaded, in bytes (default 100 MiB, WhatsApp's document limit). */
  maxMediaBytes?: number;
}

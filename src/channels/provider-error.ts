/**
 * A provider answered a call with an error (or an answer we cannot use). `retryable` is decided by
 * the adapter that threw it; `classifyError` reports it unchanged.
 */
export class ProviderError extends Error {
  override readonly name = 'ProviderError';

  constructor(
    /** Provider error code ("131047"), or ours: `http_<status>`, `invalid_response`, ... */
    readonly code: string,
    message: string,
    readonly retryable: boolean,
    /** HTTP status of the provider's answer, when there was one. */
    readonly httpStatus?: number,
    /** The provider's error body, kept for logs and the stored error detail. */
    readonly providerBody?: unknown,
  ) {
    super(message);
  }
}

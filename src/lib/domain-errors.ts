/**
 * What a rule refuses, in the domain's own terms. Services and repositories throw these; the HTTP
 * layer (src/http/errors.ts) turns each kind into its status, so no module knows HTTP.
 */
export type ErrorKind =
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'gone'
  | 'key_reused'
  | 'unsupported'
  | 'throttled'
  | 'unavailable';

/** A refusal: its kind, the error code clients read, a message, and details (which field, say). */
export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    readonly details?: unknown[],
    /** For a `throttled` refusal: when to try again, in seconds. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new DomainError('not_found', 'not_found', `${what} not found`);
export const invalid = (message: string, details?: unknown[]) =>
  new DomainError('invalid', 'validation_error', message, details);
export const conflict = (message: string, details?: unknown[]) =>
  new DomainError('conflict', 'conflict', message, details);
export const forbidden = (message: string) => new DomainError('forbidden', 'forbidden', message);
export const unauthorized = (message: string) => new DomainError('unauthorized', 'unauthorized', message);
export const throttled = (code: string, message: string, retryAfterSeconds: number) =>
  new DomainError('throttled', code, message, undefined, retryAfterSeconds);

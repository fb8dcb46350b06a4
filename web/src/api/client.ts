// The dashboard's one way to call the service: openapi-fetch typed by the paths generated from the
// service's OpenAPI document (schema.d.ts, written by scripts/api-types.ts), so a changed schema breaks
// the build where a page uses it.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';

export type ErrorBody = components['schemas']['ErrorBody'];

/** The session's CSRF token: the session API answers it on sign-in and on every read of the session. */
let csrfToken: string | undefined;

export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/** What happens when a call answers 401 (the session ended or expired): the session view signs out. */
let onUnauthorized: () => void = () => window.location.assign('/dashboard/login');

export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);
const SESSION_PATH = '/dashboard/api/session';

/** Writes carry the session's CSRF token; a 401 other than a refused sign-in ends the session view. */
const sessionMiddleware: Middleware = {
  onRequest({ request }) {
    if (!SAFE_METHODS.has(request.method) && csrfToken) request.headers.set('x-csrf-token', csrfToken);
    return request;
  },
  onResponse({ request, response }) {
    const signingIn = request.method === 'POST' && new URL(request.url).pathname === SESSION_PATH;
    if (response.status === 401 && !signingIn) onUnauthorized();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' });
api.use(sessionMiddleware);

/** The error body's message, or the status's when the answer had none (a proxy's page, a lost connection). */
export function errorMessage(error: unknown, response?: Response): string {
  const body = error as Partial<ErrorBody> | undefined;
  if (body?.error?.message) return body.error.message;
  return response ? `the service answered ${response.status}` : 'the service could not be reached';
}

/** One refused part of a request, as the error body's details name it. */
export interface ErrorDetail {
  /** A JSON pointer into the request's body (or query). */
  path: string;
  message: string;
}

/** The error body's details that name a part of the request, for a form to mark the fields they point at. */
export function errorDetails(error: unknown): ErrorDetail[] {
  const details = (error as Partial<ErrorBody> | undefined)?.error?.details ?? [];
  return details.filter(
    (detail): detail is ErrorDetail =>
      typeof detail === 'object' &&
      detail !== null &&
      typeof (detail as ErrorDetail).path === 'string' &&
      typeof (detail as ErrorDetail).message === 'string',
  );
}

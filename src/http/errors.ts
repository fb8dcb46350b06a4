import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { DomainError, type ErrorKind } from '../lib/domain-errors.ts';

export type ErrorCode =
  | 'validation_error'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'idempotency_key_reused'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal_error'
  | 'unavailable'
  | (string & {});

/** The one error type of the service: the error handler turns it into the error body. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown[],
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new AppError(404, 'not_found', `${what} not found`);
export const badRequest = (message: string, details?: unknown[]) =>
  new AppError(400, 'validation_error', message, details);
export const conflict = (message: string, details?: unknown[]) => new AppError(409, 'conflict', message, details);

/** The HTTP status of each kind of refusal the modules throw. */
const statusOf: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  key_reused: 422,
  unsupported: 415,
  throttled: 429,
  unavailable: 503,
};

const codeByStatus: Record<number, ErrorCode> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'idempotency_key_reused',
  429: 'rate_limited',
  503: 'unavailable',
};

export function errorBody(code: ErrorCode, message: string, details?: unknown[]) {
  return { error: details && details.length > 0 ? { code, message, details } : { code, message } };
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot read (bad percent-encoding, a path segment
 * over maxParamLength) answers 400 with the error body, as everything else does.
 */
export function answerRouterError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  reply
    .status(400)
    .send(
      errorBody('validation_error', `invalid URL: ${error.message}`, [
        { location: 'params', path: '/', message: error.message },
      ]),
    );
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses before any route sees it
 * (its URL and headers over 16 KiB: 431; malformed: 400; too slow: 408) is answered with the error
 * body too, and the connection closed, as Fastify's own handler does.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request_header_fields_too_large', 'the URL and headers must not exceed 16 KiB']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'the request was not received in time']
        : [400, 'validation_error', 'malformed HTTP request'];
  const body = JSON.stringify(errorBody(code, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** Maps every failure to the error body; a 500 is logged and never shows its internals. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | AppError | DomainError, request, reply) => {
    if (err instanceof AppError) {
      return reply.status(err.status).send(errorBody(err.code, err.message, err.details));
    }
    if (err instanceof DomainError) {
      if (err.retryAfterSeconds !== undefined) reply.header('Retry-After', String(err.retryAfterSeconds));
      return reply.status(statusOf[err.kind]).send(errorBody(err.code, err.message, err.details));
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send(errorBody(codeByStatus[status] ?? 'validation_error', err.message));
    }
    request.log.error({ err }, 'request failed');
    return reply.status(500).send(errorBody('internal_error', 'internal error'));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(errorBody('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`));
  });
}

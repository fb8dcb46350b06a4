import type { FastifyRequest } from 'fastify';

/**
 * The service's log options: the level, and requests written without what they carry that must not
 * reach a log. Query strings hold secrets and personal data (Meta's hub.verify_token, the sig of a
 * signed file address, the phones and emails of lookups): the log keeps their names only.
 */
export function loggerOptions(level: string) {
  return {
    level,
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: withoutQueryValues(request.url),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
  };
}

/** `/path?a=1&b=2` as `/path?a=…&b=…`. */
export function withoutQueryValues(url: string): string {
  const at = url.indexOf('?');
  if (at === -1) return url;
  const names = url
    .slice(at + 1)
    .split('&')
    .map((pair) => `${pair.split('=', 1)[0]}=…`);
  return `${url.slice(0, at)}?${names.join('&')}`;
}

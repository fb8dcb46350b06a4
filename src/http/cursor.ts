import { createHash, createHmac } from 'node:crypto';
import { isUuid } from '../lib/ids.ts';
import { signedByAny, type SecretKeys } from '../lib/secret-keys.ts';
import { badRequest } from './errors.ts';

/** A keyset position: the `created_at` (ISO text, microseconds) and `id` of the last record served. */
export interface CursorPosition {
  createdAt: string;
  id: string;
}

/** What a cursor carries: the position plus values fixed by the first page (e.g. the resolved `until`). */
export interface CursorState extends CursorPosition {
  extra?: Record<string, string>;
}

interface Payload {
  t: string;
  i: string;
  h: string;
  x?: Record<string, string>;
}

const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const invalid = () =>
  badRequest('invalid cursor', [
    { location: 'querystring', path: '/cursor', message: 'tampered, expired or made for another query' },
  ]);

/**
 * Opaque, HMAC-signed paging cursors. The payload is bound to a "scope": a hash of the business and
 * of the query's filters, so a cursor replayed with other filters or by another business is refused.
 * Timestamps stay the database's text (microseconds); they never pass through a JS Date. Signed with
 * SECRET_KEY; a cursor signed with one of its fallbacks (before a rotation) is still accepted.
 */
export class CursorCodec {
  constructor(private readonly keys: SecretKeys) {}

  /** The binding of a cursor to one business and one query (stable order of filter values). */
  static scope(parts: Record<string, string | string[] | undefined>): string {
    const canonical = Object.keys(parts)
      .sort()
      .map((k) => {
        const v = parts[k];
        return `${k}=${Array.isArray(v) ? [...v].sort().join(',') : (v ?? '')}`;
      })
      .join('&');
    return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
  }

  encode(state: CursorState, scope: string): string {
    const payload: Payload = { t: state.createdAt, i: state.id, h: scope, ...(state.extra ? { x: state.extra } : {}) };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${sign(this.keys[0], body)}`;
  }

  /** The state of a cursor made for `scope`, or a 400 `validation_error`. */
  decode(cursor: string, scope: string): CursorState {
    const [body, signature, ...rest] = cursor.split('.');
    if (!body || !signature || rest.length > 0) throw invalid();
    if (!signedByAny(this.keys, (key) => sign(key, body), signature)) throw invalid();
    let payload: Payload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
    } catch {
      throw invalid();
    }
    if (payload.h !== scope || !ISO_MICROS.test(payload.t) || !isUuid(payload.i)) throw invalid();
    return { createdAt: payload.t, id: payload.i, ...(payload.x ? { extra: payload.x } : {}) };
  }
}

function sign(key: string, body: string): string {
  return createHmac('sha256', key).update(`cursor.v1.${body}`).digest('base64url');
}

import { createHmac } from 'node:crypto';
import { signedByAny, type SecretKeys } from '../../lib/secret-keys.ts';
import type { VisitorProfile } from './visitor-profile.ts';

/** What a visitor token grants: one visitor of one channel, until it expires. */
export interface VisitorClaims {
  businessId: string;
  channelId: string;
  visitorId: string;
  /** Whether the site vouched for the visitor (identity validation). */
  verified: boolean;
  /** What the site said of a verified customer (name, email, phone), applied to their contact. */
  profile?: VisitorProfile;
}

/** A visitor keeps its conversation across visits this long without coming back. */
export const VISITOR_TOKEN_SECONDS = 90 * 24 * 3600;

interface Payload {
  b: string;
  c: string;
  v: string;
  x: 0 | 1;
  n?: string;
  m?: string;
  p?: string;
  e: number;
}

/**
 * The widget's token: `base64url(JSON {b, c, v, x, n?, m?, p?, e}) "." base64url(HMAC-SHA256(SECRET_KEY,
 * "visitor.v1." + body))`, checked under the current and the fallback keys. Hand-written like the
 * list cursors (src/http/cursor.ts): one HMAC over a small payload, with the key rotation the
 * service already has. It opens nothing but its channel's widget routes for its visitor.
 */
export class VisitorTokens {
  constructor(
    private readonly keys: SecretKeys,
    private readonly now: () => number = Date.now,
  ) {}

  issue(claims: VisitorClaims): string {
    const payload: Payload = {
      b: claims.businessId,
      c: claims.channelId,
      v: claims.visitorId,
      x: claims.verified ? 1 : 0,
      ...(claims.profile?.name ? { n: claims.profile.name } : {}),
      ...(claims.profile?.email ? { m: claims.profile.email } : {}),
      ...(claims.profile?.phone ? { p: claims.profile.phone } : {}),
      e: Math.floor(this.now() / 1000) + VISITOR_TOKEN_SECONDS,
    };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${sign(this.keys[0], body)}`;
  }

  /** The claims of a token this service issued and that has not expired; undefined otherwise. */
  read(token: string): VisitorClaims | undefined {
    const [body, signature, ...rest] = token.split('.');
    if (!body || !signature || rest.length > 0 || body.length > 1000) return undefined;
    if (!signedByAny(this.keys, (key) => sign(key, body), signature)) return undefined;
    let payload: Payload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
    } catch {
      return undefined;
    }
    if (typeof payload.e !== 'number' || payload.e * 1000 < this.now()) return undefined;
    return {
      businessId: payload.b,
      channelId: payload.c,
      visitorId: payload.v,
      verified: payload.x === 1,
      ...(profileOf(payload) ? { profile: profileOf(payload) } : {}),
    };
  }
}

function profileOf(payload: Payload): VisitorProfile | undefined {
  const profile: VisitorProfile = {};
  if (typeof payload.n === 'string') profile.name = payload.n;
  if (typeof payload.m === 'string') profile.email = payload.m;
  if (typeof payload.p === 'string') profile.phone = payload.p;
  return Object.keys(profile).length > 0 ? profile : undefined;
}

function sign(key: string, body: string): string {
  return createHmac('sha256', key).update(`visitor.v1.${body}`).digest('base64url');
}

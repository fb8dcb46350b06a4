import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { UserRole } from '../db/types.ts';
import { AppError } from './errors.ts';

/** The session cookie of the dashboard (its token; the session itself is in the database). */
export const SESSION_COOKIE = 'session';
/** The header a dashboard write carries its session's CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';

/** The cookie's attributes: only the dashboard's paths, never read by scripts, Secure behind https. */
export function sessionCookieOptions(publicUrl: string) {
  return {
    path: '/dashboard',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: new URL(publicUrl).protocol === 'https:',
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Whether the request's CSRF header is the session's token, compared in constant time. */
export function csrfMatches(request: FastifyRequest, expected: string): boolean {
  const given = request.headers[CSRF_HEADER];
  return typeof given === 'string' && given !== '' && timingSafeEqual(digest(given), digest(expected));
}

/**
 * Whether an `Origin` header, when the browser sent one, is the service's own: PUBLIC_URL's origin,
 * or the host the request was sent to (a development server proxying to the service).
 */
export function sameOrigin(request: FastifyRequest, publicOrigin: string): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  if (origin === publicOrigin) return true;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

/** Whether a request's body is declared JSON: a form of another site cannot send that without asking first. */
export function isJsonBody(request: FastifyRequest): boolean {
  const type = request.headers['content-type'] ?? '';
  return /^application\/json\s*(;|$)/i.test(type);
}

const rank: Record<UserRole, number> = { agent: 0, admin: 1, owner: 2 };

/**
 * A preHandler for routes of admins and owners (`requireRole('admin')`) or of owners only: a user
 * below answers 403 `forbidden`. The role is read with the session on every request, so a change
 * applies at once.
 */
export function requireRole(role: 'admin' | 'owner') {
  return async (request: FastifyRequest): Promise<void> => {
    if (rank[request.dashboard.role] < rank[role])
      throw new AppError(403, 'forbidden', `only ${role === 'admin' ? 'admins and owners' : 'owners'} may do this`);
  };
}

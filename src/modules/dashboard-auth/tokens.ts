import { createHash, randomBytes } from 'node:crypto';

/** A random 32-byte token, base64url (43 characters): a session's cookie, its CSRF token. */
export const newToken = (): string => randomBytes(32).toString('base64url');

/** What is stored of a token: its SHA-256, hex. A token is random, so a plain digest is enough. */
export const tokenDigest = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Whether `value` could be a token of ours; anything else is refused without a lookup. */
export const isToken = (value: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(value);

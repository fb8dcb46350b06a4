import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Clock } from '../../../src/lib/clock.ts';
import { adminHeaders } from '../../helpers/tenants.ts';

/** A clock the test moves by hand. */
export class TestClock implements Clock {
  constructor(public ms = Date.parse('2030-01-01T00:00:00Z')) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export const MINUTE = 60_000;
export const DAY = 24 * 60 * MINUTE;

/** A user made through the operator API; answers its id. */
export async function createUser(
  app: FastifyInstance,
  businessId: string,
  user: { email: string; name?: string; password?: string; role?: string; invite?: boolean },
): Promise<{ id: string; invitation?: { url: string; expires_at: string } }> {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/users`,
    headers: adminHeaders,
    payload: { name: user.email.split('@')[0], ...user },
  });
  if (res.statusCode !== 201) throw new Error(`create user: ${res.body}`);
  const body = res.json();
  return { id: body.user.id, invitation: body.invitation };
}

/** A signed-in browser: its cookie's token and the session's CSRF token. */
export interface Browser {
  token: string;
  csrf: string;
}

const json = { 'content-type': 'application/json' };

/** `POST /dashboard/api/session` as a browser sends it. */
export function postSignIn(
  app: FastifyInstance,
  payload: unknown,
  options: { remoteAddress?: string; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/dashboard/api/session',
    headers: { ...json, ...options.headers },
    payload: JSON.stringify(payload),
    remoteAddress: options.remoteAddress,
  });
}

/** The session cookie a response set. */
export function sessionCookie(res: LightMyRequestResponse) {
  return (res.cookies as { name: string; value: string; [k: string]: unknown }[]).find((c) => c.name === 'session');
}

/** Signs in and answers the browser; fails the test on anything but 200. */
export async function signIn(
  app: FastifyInstance,
  email: string,
  password: string,
  options: { remoteAddress?: string } = {},
): Promise<Browser> {
  const res = await postSignIn(app, { email, password }, options);
  if (res.statusCode !== 200) throw new Error(`sign in: ${res.statusCode} ${res.body}`);
  return { token: sessionCookie(res)!.value, csrf: res.json().csrf_token };
}

/** A request of a signed-in browser: its cookie, and its CSRF token unless told otherwise. */
export function call(
  app: FastifyInstance,
  browser: Browser,
  method: InjectOptions['method'],
  url: string,
  payload?: unknown,
  headers: Record<string, string | undefined> = {},
): Promise<LightMyRequestResponse> {
  const all: Record<string, string> = { cookie: `session=${browser.token}`, 'x-csrf-token': browser.csrf };
  if (payload !== undefined) all['content-type'] = 'application/json';
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) delete all[name];
    else all[name] = value;
  }
  return app.inject({
    method,
    url: `/dashboard/api${url}`,
    headers: all,
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });
}

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signTikTokBody } from '../../src/channels/tiktok/tiktok.signature.ts';

// A fake of TikTok's Business API on loopback, speaking its wire format: every answer in TikTok's
// envelope (`{code, message, request_id, data}`, code 0 on success, HTTP 200 even for most errors),
// the `Access-Token` header, the OAuth renewal of a business account's tokens
// (`/open_api/v1.3/tt_user/oauth2/refresh_token/`, which spends the refresh token it renews), Business
// Messaging's send (`/business/message/send/`), media upload (multipart) and download (a signed URL
// the fake serves), and files at `/files/` for the images a client sends by URL. Tests point a
// channel's api_base_url at `baseUrl`; the helpers below build webhook events as TikTok posts them.

/** One request the fake received (a multipart body as its fields; a file as its size and type). */
export interface TikTokRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown> | null;
}

/** A TikTok error to answer a call with (HTTP 200 unless `status` says otherwise). */
export interface TikTokFailure {
  code: number;
  message?: string;
  status?: number;
}

export interface FakeTikTokApi {
  /** e.g. http://127.0.0.1:41234 (a channel's api_base_url). */
  baseUrl: string;
  appId: string;
  appSecret: string;
  businessId: string;
  /** The tokens the fake accepts now; a renewal replaces both. */
  accessToken: string;
  refreshToken: string;
  requests: TikTokRequest[];
  /** The send calls received, in order. */
  sends(): TikTokRequest[];
  /** The renewals received, in order. */
  refreshes(): TikTokRequest[];
  uploads(): TikTokRequest[];
  failNextSends(count: number, failure: TikTokFailure): void;
  /** Refuse renewals (an expired or revoked refresh token) until told otherwise. */
  refuseRefresh(refuse: boolean): void;
  /** Answer renewals only once `release` is called (to hold concurrent sends on one renewal). */
  holdRefresh(): { release(): void };
  /** Serve an inbound image; answers its media id for an `im_receive_msg` event. */
  addInboundImage(bytes: Buffer, contentType: string): string;
  /** Serve a file a client sends by URL; answers its URL. */
  addFile(bytes: Buffer, contentType: string): string;
  close(): Promise<void>;
}

const hex = (n: number) => randomBytes(n).toString('hex');

/** Start the fake on 127.0.0.1 (a free port). */
export async function startFakeTikTokApi(): Promise<FakeTikTokApi> {
  const appId = String(7_000_000_000_000_000_000n + BigInt(`0x${hex(6)}`));
  const appSecret = hex(20);
  const businessId = `-000${hex(16)}`;
  const state = { accessToken: `act.${hex(24)}`, refreshToken: `rft.${hex(24)}`, refuse: false };
  const requests: TikTokRequest[] = [];
  const failures: TikTokFailure[] = [];
  let held: Promise<void> | null = null;
  const media = new Map<string, { bytes: Buffer; contentType: string }>();
  const files = new Map<string, { bytes: Buffer; contentType: string }>();
  let origin = '';

  const envelope = (res: ServerResponse, code: number, message: string, data: unknown = {}, status = 200) => {
    const text = JSON.stringify({ code, message, request_id: hex(12), data });
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const fail = (res: ServerResponse, failure: TikTokFailure) =>
    envelope(res, failure.code, failure.message ?? `TikTok error ${failure.code}`, {}, failure.status);
  const serve = (res: ServerResponse, file: { bytes: Buffer; contentType: string } | undefined) => {
    if (!file) return fail(res, { code: 40002, message: 'not found', status: 404 });
    res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length });
    res.end(file.bytes);
  };

  const handle = async (request: TikTokRequest, res: ServerResponse) => {
    const { path, body } = request;
    if (path.startsWith('/files/')) return serve(res, files.get(path.slice(7)));
    if (path.startsWith('/media-cdn/')) {
      // Signed in its query, as TikTok's download URLs are.
      return serve(res, request.headers['access-token'] ? undefined : media.get(path.slice(11)));
    }
    if (path === '/open_api/v1.3/tt_user/oauth2/refresh_token/') {
      if (held) await held;
      if (body?.client_id !== appId || body?.client_secret !== appSecret)
        return fail(res, { code: 40101, message: 'Illegal app_id or secret' });
      if (body?.grant_type !== 'refresh_token') return fail(res, { code: 40002, message: 'invalid grant_type' });
      if (state.refuse || body?.refresh_token !== state.refreshToken)
        return fail(res, { code: 40007, message: 'The refresh_token is invalid or has expired' });
      state.accessToken = `act.${hex(24)}`;
      state.refreshToken = `rft.${hex(24)}`;
      return envelope(res, 0, 'OK', {
        open_id: businessId,
        scope: 'message.list.read,message.list.send,message.list.manage',
        access_token: state.accessToken,
        expires_in: 86_400,
        refresh_token: state.refreshToken,
        refresh_token_expires_in: 31_536_000,
      });
    }
    if (request.headers['access-token'] !== state.accessToken)
      return fail(res, { code: 40105, message: 'Access token is incorrect or has been revoked.' });
    if (body?.business_id !== businessId) return fail(res, { code: 40001, message: 'No permission for business_id' });
    if (path === '/open_api/v1.3/business/message/send/') {
      const failure = failures.shift();
      if (failure) return fail(res, failure);
      if (body.recipient_type !== 'CONVERSATION' || typeof body.recipient !== 'string')
        return fail(res, { code: 40002, message: 'recipient: a conversation is required' });
      const text = (body.text as { body?: unknown } | undefined)?.body;
      const image = (body.image as { media_id?: unknown } | undefined)?.media_id;
      if (body.message_type === 'TEXT' ? typeof text !== 'string' || text.length === 0 : body.message_type !== 'IMAGE')
        return fail(res, { code: 40002, message: 'message_type and its content do not match' });
      if (body.message_type === 'IMAGE' && (typeof image !== 'string' || !media.has(image)))
        return fail(res, { code: 40002, message: 'image.media_id is not an uploaded media' });
      return envelope(res, 0, 'OK', { message: { message_id: `msg.${hex(16)}` } });
    }
    if (path === '/open_api/v1.3/business/message/media/upload/') {
      if (body.media_type !== 'IMAGE' || !body.file) return fail(res, { code: 40002, message: 'file is required' });
      const file = body.file as { bytes: Buffer; contentType: string };
      const mediaId = `v0${hex(16)}`;
      media.set(mediaId, file);
      return envelope(res, 0, 'OK', { media_id: mediaId });
    }
    if (path === '/open_api/v1.3/business/message/media/download/') {
      const mediaId = typeof body.media_id === 'string' ? body.media_id : '';
      if (!media.has(mediaId) || typeof body.conversation_id !== 'string' || typeof body.message_id !== 'string')
        return fail(res, { code: 40002, message: 'media not found' });
      return envelope(res, 0, 'OK', { download_url: `${origin}/media-cdn/${mediaId}?x-signature=${hex(16)}` });
    }
    return fail(res, { code: 40002, message: 'Unsupported request', status: 404 });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', origin);
      const raw = Buffer.concat(chunks);
      void readBody(raw, req.headers['content-type'])
        .then((body) => {
          const request = { method: req.method ?? 'GET', path: url.pathname, headers: req.headers, body };
          requests.push(request);
          return handle(request, res);
        })
        .catch((err: unknown) => {
          res.writeHead(500);
          res.end(String(err));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const onPath = (path: string) => () => requests.filter((r) => r.path === path);
  return {
    baseUrl: origin,
    appId,
    appSecret,
    businessId,
    get accessToken() {
      return state.accessToken;
    },
    get refreshToken() {
      return state.refreshToken;
    },
    requests,
    sends: onPath('/open_api/v1.3/business/message/send/'),
    refreshes: onPath('/open_api/v1.3/tt_user/oauth2/refresh_token/'),
    uploads: onPath('/open_api/v1.3/business/message/media/upload/'),
    failNextSends: (count, failure) => {
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    refuseRefresh: (refuse) => {
      state.refuse = refuse;
    },
    holdRefresh: () => {
      let release = () => {};
      held = new Promise<void>((resolve) => {
        release = () => {
          held = null;
          resolve();
        };
      });
      return { release };
    },
    addInboundImage: (bytes, contentType) => {
      const mediaId = `v0${hex(16)}`;
      media.set(mediaId, { bytes, contentType });
      return mediaId;
    },
    addFile: (bytes, contentType) => {
      const name = `${hex(8)}.${contentType.split('/')[1]}`;
      files.set(name, { bytes, contentType });
      return `${origin}/files/${name}`;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A JSON body, or a multipart form's fields (a file as its bytes and type); null for anything else. */
async function readBody(raw: Buffer, contentType: string | undefined): Promise<Record<string, unknown> | null> {
  if (contentType?.startsWith('multipart/form-data')) {
    const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
    const fields: Record<string, unknown> = {};
    for (const [name, value] of form) {
      fields[name] =
        typeof value === 'string' ? value : { bytes: Buffer.from(await value.arrayBuffer()), contentType: value.type };
    }
    return fields;
  }
  try {
    const parsed: unknown = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : null;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A TikTok user as Business Messaging names one: an id, a username, and their conversation with the business. */
export interface TikTokPerson {
  id: string;
  username: string;
  conversationId: string;
}

export const tiktokPerson = (username = `user_${hex(3)}`): TikTokPerson => ({
  id: `-000${hex(16)}`,
  username,
  conversationId: `0:1:${BigInt(`0x${hex(7)}`)}:${BigInt(`0x${hex(7)}`)}`,
});

/** The body TikTok posts: one event, its content a JSON string. */
export function tiktokEvent(event: string, businessId: string, content: Record<string, unknown>) {
  return {
    client_key: 'aw_client_key',
    event,
    create_time: Math.floor(Date.now() / 1000),
    user_openid: businessId,
    content: JSON.stringify(content),
  };
}

/** A customer's message to the business (`message`: `{type: 'text', text: {body}}`, or an image). */
export function receivedMessage(
  businessId: string,
  person: TikTokPerson,
  message: Record<string, unknown>,
  at = Date.now(),
) {
  return tiktokEvent('im_receive_msg', businessId, {
    conversation_id: person.conversationId,
    message_id: `msg.${hex(16)}`,
    timestamp: at,
    from: person.username,
    from_user: { id: person.id, role: 'personal_account' },
    to: 'the_business',
    to_user: { id: businessId, role: 'business_account' },
    ...message,
  });
}

/** A message the business account sent to the person (`im_send_msg`), with its id when known. */
export function sentMessage(
  businessId: string,
  person: TikTokPerson,
  message: Record<string, unknown>,
  messageId = `msg.${hex(16)}`,
) {
  return tiktokEvent('im_send_msg', businessId, {
    conversation_id: person.conversationId,
    message_id: messageId,
    timestamp: Date.now(),
    from: 'the_business',
    from_user: { id: businessId, role: 'business_account' },
    to: person.username,
    to_user: { id: person.id, role: 'personal_account' },
    ...message,
  });
}

/** The person read the conversation up to `at` (Unix ms). */
export function readEvent(businessId: string, person: TikTokPerson, at: number) {
  return tiktokEvent('im_mark_read_msg', businessId, {
    conversation_id: person.conversationId,
    timestamp: at,
    from: person.username,
    from_user: { id: person.id, role: 'personal_account' },
    to: 'the_business',
    to_user: { id: businessId, role: 'business_account' },
    read: { last_read_timestamp: at },
  });
}

/** The headers of an event signed with the app secret at `t` (Unix seconds), and its bytes. */
export function signedEvent(body: unknown, appSecret: string, t?: number) {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return {
    payload,
    headers: { 'content-type': 'application/json', 'tiktok-signature': signTikTokBody(payload, appSecret, t) },
  };
}

import { randomBytes, randomInt } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signMetaBody } from '../../src/channels/meta/meta.signature.ts';

// A fake of Meta's Messenger Platform on loopback (Messenger and Instagram messaging), speaking
// its wire format: the Send API (`POST /{page or account id}/messages` answering recipient_id and
// message_id), user profiles (`GET /{psid}?fields=...`), attachment URLs on its "CDN" (signed
// in the URL, served without a token), and Graph error bodies. Tests point a channel's
// api_base_url at `baseUrl`; the helpers below build webhook events as Meta posts them.

/** One request the fake received. */
export interface MetaRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A Graph error to answer with. */
export interface MetaFailure {
  status: number;
  code: number;
  subcode?: number;
  message?: string;
}

export interface FakeMetaMessagingApi {
  /** e.g. http://127.0.0.1:41234/v21.0 (a channel's api_base_url). */
  baseUrl: string;
  accessToken: string;
  requests: MetaRequest[];
  /** The Send API calls received, in order. */
  sends(): MetaRequest[];
  failNextSends(count: number, failure: MetaFailure): void;
  /**
   * Hold the answer of the next send until `release` (Meta's echo may come before it): `sent`
   * resolves with the send's mid once the request is in.
   */
  holdNextSend(): { sent: Promise<string>; release(): void };
  /** Name a person: their profile answers these fields. */
  setProfile(id: string, fields: Record<string, string>): void;
  /**
   * Serve an attachment or profile picture; answers its URL (signed in its query, as Meta's CDN
   * URLs are). `status` other than 200: the CDN answers that, with a small error page.
   */
  addAttachment(bytes: Buffer, contentType: string, status?: number): string;
  close(): Promise<void>;
}

const hex = (n: number) => randomBytes(n).toString('hex');

/** A page, account or person id as Meta writes them: 16 or 17 digits. */
export const metaId = () =>
  `${randomInt(1, 9)}${String(randomInt(0, 1e9)).padStart(9, '0')}${String(randomInt(0, 1e6)).padStart(6, '0')}`;

/** Start the fake on 127.0.0.1 (a free port). */
export async function startFakeMetaMessagingApi(): Promise<FakeMetaMessagingApi> {
  const accessToken = `EAAG${hex(24)}`;
  const requests: MetaRequest[] = [];
  const failures: MetaFailure[] = [];
  const profiles = new Map<string, Record<string, string>>();
  const attachments = new Map<string, { bytes: Buffer; contentType: string; status: number }>();
  const holds: { received(mid: string): void; released: Promise<void> }[] = [];
  let origin = '';

  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const graphError = (res: ServerResponse, failure: MetaFailure) =>
    json(res, failure.status, {
      error: {
        message: failure.message ?? `Graph error ${failure.code}`,
        type: failure.code === 190 ? 'OAuthException' : 'GraphMethodException',
        code: failure.code,
        ...(failure.subcode ? { error_subcode: failure.subcode } : {}),
        fbtrace_id: hex(8),
      },
    });

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', origin);
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = null;
      }
      const request: MetaRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
      };
      requests.push(request);
      // The CDN: signed URLs, no token.
      if (url.pathname.startsWith('/cdn/')) {
        const file = attachments.get(url.pathname.slice(5));
        if (!file || url.searchParams.get('oh') === null) return json(res, 404, { error: 'not found' });
        if (file.status !== 200) {
          res.writeHead(file.status, { 'content-type': 'text/html' });
          return res.end('<html><body>CDN error</body></html>');
        }
        res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length });
        return res.end(file.bytes);
      }
      if (req.headers.authorization !== `Bearer ${accessToken}`)
        return graphError(res, { status: 401, code: 190, message: 'Error validating access token' });
      const send = /^\/v21\.0\/([0-9]+|me)\/messages$/.exec(url.pathname);
      if (send && req.method === 'POST') {
        const failure = failures.shift();
        if (failure) return graphError(res, failure);
        const recipient = (body as { recipient?: { id?: unknown } } | null)?.recipient?.id;
        if (typeof recipient !== 'string')
          return graphError(res, { status: 400, code: 100, message: '(#100) The parameter recipient is required' });
        const mid = `m_${hex(24)}`;
        const hold = holds.shift();
        if (!hold) return json(res, 200, { recipient_id: recipient, message_id: mid });
        hold.received(mid);
        return void hold.released.then(() => json(res, 200, { recipient_id: recipient, message_id: mid }));
      }
      const profile = /^\/v21\.0\/([0-9]+)$/.exec(url.pathname);
      if (profile && req.method === 'GET') {
        const fields = profiles.get(profile[1]);
        if (!fields) return graphError(res, { status: 400, code: 100, subcode: 2018218, message: 'no profile' });
        const wanted = (url.searchParams.get('fields') ?? '').split(',');
        return json(res, 200, {
          id: profile[1],
          ...Object.fromEntries(Object.entries(fields).filter(([k]) => wanted.includes(k))),
        });
      }
      return graphError(res, { status: 400, code: 100, message: 'Unsupported request' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl: `${origin}/v21.0`,
    accessToken,
    requests,
    sends: () => requests.filter((r) => r.method === 'POST' && r.path.endsWith('/messages')),
    failNextSends: (count, failure) => {
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    holdNextSend: () => {
      let release = () => {};
      let received = (_mid: string) => {};
      const sent = new Promise<string>((resolve) => (received = resolve));
      holds.push({ received, released: new Promise<void>((resolve) => (release = resolve)) });
      return { sent, release };
    },
    setProfile: (id, fields) => profiles.set(id, fields),
    addAttachment: (bytes, contentType, status = 200) => {
      const name = hex(8);
      attachments.set(name, { bytes, contentType, status });
      return `${origin}/cdn/${name}?_nc_cat=1&oh=${hex(16)}&oe=${Date.now().toString(16)}`;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The body Meta posts: `object` ("page" or "instagram") and one entry per account. */
export function messagingNotification(object: string, account: string, events: unknown[], field = 'messaging') {
  return { object, entry: [{ id: account, time: Date.now(), [field]: events }] };
}

/** A message event from `person` to the account (`message`: text, attachments, quick_reply, reply_to...). */
export function messageEvent(person: string, account: string, message: Record<string, unknown>, at = Date.now()) {
  return {
    sender: { id: person },
    recipient: { id: account },
    timestamp: at,
    message: { mid: `m_${hex(20)}`, ...message },
  };
}

/** The echo of a message the account sent to `person`. */
export function echoEvent(account: string, person: string, message: Record<string, unknown>, at = Date.now()) {
  return {
    sender: { id: account },
    recipient: { id: person },
    timestamp: at,
    message: { mid: `m_${hex(20)}`, is_echo: true, app_id: 263902037430900, ...message },
  };
}

/** The headers of a notification signed with an app secret, and its bytes. */
export function signedBody(body: unknown, appSecret: string) {
  const payload = JSON.stringify(body);
  return {
    payload,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signMetaBody(payload, appSecret) },
  };
}

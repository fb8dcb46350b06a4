import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  GraphErrorBody,
  GraphMediaInfo,
  GraphSendAnswer,
} from '../../src/channels/whatsapp-cloud/whatsapp-cloud.wire.ts';

// A fake Meta Graph API on loopback that speaks the Cloud API wire format: sends, media lookups and
// downloads, Graph error bodies. Tests point a channel's api_base_url at `baseUrl`.

/** One request the fake received. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or null when there was none or it was not JSON. */
  body: unknown;
  rawBody: string;
  /** When its headers arrived, on the test process's clock (performance.now(), ms). */
  at: number;
}

/** A Graph error to answer with: HTTP status plus the fields of `{error: {...}}`. */
export interface GraphFailure {
  status: number;
  code: number;
  message?: string;
  type?: string;
  subcode?: number;
  details?: string;
}

/** A running fake Graph API. */
export interface FakeGraphApi {
  /** e.g. http://127.0.0.1:41234/v21.0 (use as a channel's api_base_url). */
  baseUrl: string;
  origin: string;
  accessToken: string;
  /** Every request, in arrival order. */
  requests: RecordedRequest[];
  /** TCP connections accepted so far (a refused target must open none). */
  connections(): number;
  /** The message sends (POST /{phone_number_id}/messages) received, in order. */
  sends(): RecordedRequest[];
  /** Take this token too (a channel's rotated access token). */
  acceptAccessToken(token: string): void;
  /** Answer the next `count` sends with this Graph error. */
  failNextSends(count: number, failure: GraphFailure): void;
  /** Drop the connection of the next `count` sends without answering (a network error). */
  disconnectNextSends(count: number): void;
  /** Wait this long before answering every request (0 to stop). */
  setDelay(ms: number): void;
  /**
   * Hand out media download URLs on this origin instead of the fake's own (Meta's are on another
   * host, lookaside.fbsbx.com); the path and query stay those the fake serves.
   */
  setMediaOrigin(origin: string | undefined): void;
  /** Serve media under a new (or the given) media id; returns the id and the bytes' sha256 (hex). */
  addMedia(media: { bytes: Buffer; mimeType: string; id?: string }): { id: string; sha256: string };
  /** Forget recorded requests, pending failures and the media origin. */
  reset(): void;
  close(): Promise<void>;
}

interface Options {
  accessToken?: string;
  apiVersion?: string;
  /** Meta's canonical id for a `to` (default: its digits), e.g. to play the 549 -> 54 quirk. */
  waIdFor?: (input: string) => string;
}

const sendTypes = new Set([
  'text',
  'image',
  'audio',
  'video',
  'document',
  'sticker',
  'template',
  'interactive',
  'location',
  'contacts',
  'reaction',
]);

/** Start a fake Graph API on 127.0.0.1 (a free port). */
export async function startFakeGraphApi(options: Options = {}): Promise<FakeGraphApi> {
  const accessToken = options.accessToken ?? `EAAG${randomBytes(16).toString('hex')}`;
  const version = options.apiVersion ?? 'v21.0';
  const waIdFor = options.waIdFor ?? ((input: string) => input.replace(/\D/g, ''));
  const requests: RecordedRequest[] = [];
  const authorizations = new Set([`Bearer ${accessToken}`]);
  const failures: (GraphFailure | 'disconnect')[] = [];
  const media = new Map<string, { bytes: Buffer; mimeType: string; sha256: string }>();
  const timers = new Set<NodeJS.Timeout>();
  let delayMs = 0;
  let origin = '';
  let mediaOrigin: string | undefined;
  let connections = 0;

  const graphError = (res: ServerResponse, failure: GraphFailure) =>
    json(res, failure.status, {
      error: {
        message: failure.message ?? `(#${failure.code}) Graph error ${failure.code}`,
        type: failure.type ?? 'OAuthException',
        code: failure.code,
        ...(failure.subcode !== undefined ? { error_subcode: failure.subcode } : {}),
        ...(failure.details !== undefined
          ? { error_data: { messaging_product: 'whatsapp', details: failure.details } }
          : {}),
        fbtrace_id: `A${randomBytes(11).toString('base64url')}`,
      },
    } satisfies GraphErrorBody);

  const handle = (req: IncomingMessage, res: ServerResponse, recorded: RecordedRequest) => {
    if (!authorizations.has(req.headers.authorization ?? '')) {
      return graphError(res, {
        status: 401,
        code: 190,
        message: 'Invalid OAuth access token - Cannot parse access token',
      });
    }
    if (req.method === 'GET' && recorded.path === '/whatsapp_business/attachments/') {
      const item = media.get(recorded.query.mid ?? '');
      if (!item) return graphError(res, { status: 404, code: 100, message: 'Media not found' });
      res.writeHead(200, { 'content-type': item.mimeType, 'content-length': item.bytes.length });
      return res.end(item.bytes);
    }
    const prefix = `/${version}/`;
    const parts = recorded.path.startsWith(prefix) ? recorded.path.slice(prefix.length).split('/') : [];
    if (req.method === 'POST' && parts.length === 2 && parts[1] === 'messages')
      return answerSend(res, recorded, failures.shift());
    if (req.method === 'GET' && parts.length === 1 && parts[0]) {
      const item = media.get(parts[0]);
      if (!item) {
        return graphError(res, {
          status: 400,
          code: 100,
          subcode: 33,
          type: 'GraphMethodException',
          message: `Unsupported get request. Object with ID '${parts[0]}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        });
      }
      return json(res, 200, {
        messaging_product: 'whatsapp',
        url: `${mediaOrigin ?? origin}/whatsapp_business/attachments/?mid=${parts[0]}&ext=${Date.now()}`,
        mime_type: item.mimeType,
        sha256: item.sha256,
        file_size: item.bytes.length,
        id: parts[0],
      } satisfies GraphMediaInfo);
    }
    return graphError(res, { status: 400, code: 2500, message: `Unknown path components: ${recorded.path}` });
  };

  const answerSend = (
    res: ServerResponse,
    recorded: RecordedRequest,
    failure: GraphFailure | 'disconnect' | undefined,
  ) => {
    if (failure === 'disconnect') return void res.socket?.destroy();
    if (failure) return graphError(res, failure);
    const body = recorded.body as Record<string, unknown> | null;
    const type = typeof body?.type === 'string' ? body.type : '';
    if (
      body?.messaging_product !== 'whatsapp' ||
      typeof body.to !== 'string' ||
      !sendTypes.has(type) ||
      typeof body[type] !== 'object'
    ) {
      return graphError(res, {
        status: 400,
        code: 100,
        message: '(#100) Invalid parameter',
        details: 'the message is missing a required parameter',
      });
    }
    json(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: body.to, wa_id: waIdFor(body.to) }],
      messages: [
        {
          id: wamid(waIdFor(body.to), newKeyId(), true),
          ...(type === 'template' ? { message_status: 'accepted' } : {}),
        },
      ],
    } satisfies GraphSendAnswer);
  };

  const server = createServer((req, res) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body: parseJson(rawBody),
        rawBody,
        at,
      };
      requests.push(recorded);
      if (delayMs <= 0) return handle(req, res, recorded);
      const timer = setTimeout(() => {
        timers.delete(timer);
        handle(req, res, recorded);
      }, delayMs);
      timers.add(timer);
    });
  });
  server.on('connection', () => void (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl: `${origin}/${version}`,
    origin,
    accessToken,
    requests,
    connections: () => connections,
    sends: () => requests.filter((r) => r.method === 'POST' && r.path.endsWith('/messages')),
    acceptAccessToken: (token) => void authorizations.add(`Bearer ${token}`),
    failNextSends: (count, failure) => failures.push(...Array<GraphFailure>(count).fill(failure)),
    disconnectNextSends: (count) => failures.push(...Array<'disconnect'>(count).fill('disconnect')),
    setDelay: (ms) => void (delayMs = ms),
    setMediaOrigin: (value) => void (mediaOrigin = value),
    addMedia({ bytes, mimeType, id }) {
      const mediaId = id ?? String(10n ** 15n + BigInt(`0x${randomBytes(6).toString('hex')}`));
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      media.set(mediaId, { bytes, mimeType, sha256 });
      return { id: mediaId, sha256 };
    },
    reset() {
      requests.length = 0;
      failures.length = 0;
      mediaOrigin = undefined;
      delayMs = 0;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function parseJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return null;
  }
}

// ---- inbound notifications, as Meta posts them to our webhook ----

/** The parts of one `messages` change: the business number, senders' profiles, messages, receipts. */
export interface NotificationParts {
  phoneNumberId: string;
  displayPhoneNumber?: string;
  wabaId?: string;
  contacts?: { waId: string; name: string }[];
  messages?: Record<string, unknown>[];
  statuses?: Record<string, unknown>[];
}

/** A `whatsapp_business_account` notification body in Meta's exact shape (one entry per part). */
export function metaNotification(...parts: NotificationParts[]): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: parts.map((part) => ({
      id: part.wabaId ?? '102290129340398',
      changes: [
        {
          value: {
            messaging_product: 'whatsapp',
            metadata: {
              display_phone_number: part.displayPhoneNumber ?? '15550783881',
              phone_number_id: part.phoneNumberId,
            },
            ...(part.contacts
              ? { contacts: part.contacts.map((c) => ({ profile: { name: c.name }, wa_id: c.waId })) }
              : {}),
            ...(part.messages ? { messages: part.messages } : {}),
            ...(part.statuses ? { statuses: part.statuses } : {}),
          },
          field: 'messages',
        },
      ],
    })),
  };
}

/**
 * A wamid as the Cloud API gives it: the message's key (the chat's number, fromMe, the key id a
 * linked device records for the same message) in Thrift's compact encoding, base64'd.
 */
export function wamid(phone: string, keyId = newKeyId(), fromMe = false): string {
  const head = Buffer.from([0x1c, 0x18, phone.length]);
  const middle = Buffer.from([0x15, 0x02, 0x00, fromMe ? 0x11 : 0x12, 0x18, keyId.length]);
  return `wamid.${Buffer.concat([head, Buffer.from(phone), middle, Buffer.from(keyId), Buffer.from([0])]).toString('base64')}`;
}

/** A message key id as WhatsApp's apps make them: 20 upper-case hex digits. */
export const newKeyId = () => `3A${randomBytes(9).toString('hex').toUpperCase()}`;

/** One inbound message object: `{from, id, timestamp, type, [type]: content}` plus extras (context, ...). */
export function inboundMessage(
  from: string,
  type: string,
  content: unknown,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    from,
    id: wamid(from),
    timestamp: String(Math.floor(Date.now() / 1000)),
    type,
    ...(content === undefined ? {} : { [type]: content }),
    ...extra,
  };
}

/** A delivery receipt object as Meta sends it in `statuses`. */
export function statusReceipt(
  id: string,
  status: 'sent' | 'delivered' | 'read' | 'failed',
  recipientId: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id,
    status,
    timestamp: String(Math.floor(Date.now() / 1000)),
    recipient_id: recipientId,
    ...(status === 'failed'
      ? {}
      : {
          conversation: { id: randomBytes(16).toString('hex'), origin: { type: 'service' } },
          pricing: { billable: true, pricing_model: 'PMP', category: 'service' },
        }),
    ...extra,
  };
}

/** The raw bytes Meta would post and the headers it would sign them with (app secret HMAC). */
export function signedNotification(
  body: unknown,
  appSecret: string,
): { payload: string; headers: Record<string, string> } {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const signature = createHmac('sha256', appSecret).update(payload).digest('hex');
  return {
    payload,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${signature}` },
  };
}

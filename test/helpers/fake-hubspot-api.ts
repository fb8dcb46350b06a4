import { createHmac, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A fake HubSpot API on loopback that speaks the custom channels API's wire format: publishing a
// message (POST /conversations/v3/custom-channels/{channelId}/messages) with a Bearer token,
// HubSpot's validation of the body, one message per integrationIdempotencyId (a repeat answers the
// message published already), and HubSpot's error body {status, message, correlationId, category}.
// Reports of an outgoing message's delivery (PATCH .../messages/{messageId}, statusType SENT, FAILED
// or READ) are recorded. Tests point a channel's api_base_url at `baseUrl`. Also: the OUTGOING_CHANNEL_MESSAGE_CREATED
// event HubSpot posts to a custom channel's webhook, and its X-HubSpot-Signature-v3.

/** One request the fake received. */
export interface HubSpotRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A message the fake holds, as HubSpot answers it. */
export interface HubSpotMessage {
  id: string;
  channelId: string;
  channelAccountId: string;
  conversationsThreadId: string;
  integrationThreadId: string;
  integrationIdempotencyId: string;
  text: string;
  senders: unknown[];
  recipients: unknown[];
}

export interface FakeHubSpotApi {
  /** e.g. http://127.0.0.1:41234 (a channel's api_base_url). */
  baseUrl: string;
  accessToken: string;
  requests: HubSpotRequest[];
  /** The publish calls received, in order (repeats included). */
  publishes(): HubSpotRequest[];
  /** The delivery reports received (PATCH .../messages/{messageId}), in order. */
  reports(): { channelId: string; messageId: string; statusType: unknown; errorMessage: unknown }[];
  /** The messages held, one per idempotency id. */
  messages(): HubSpotMessage[];
  /**
   * Answer the next `count` publishes with HTTP `status`; with `keep`, the message is stored all
   * the same (HubSpot had it, the answer was lost).
   */
  failNextPublishes(count: number, status: number, options?: { keep?: boolean }): void;
  reset(): void;
  close(): Promise<void>;
}

const DELIVERY_TYPES = new Set(['HS_EMAIL_ADDRESS', 'HS_PHONE_NUMBER', 'CHANNEL_SPECIFIC_OPAQUE_ID']);
const PUBLISH = /^\/conversations\/v3\/custom-channels\/([0-9]+)\/messages$/;
const REPORT = /^\/conversations\/v3\/custom-channels\/([0-9]+)\/messages\/([^/]+)$/;
const STATUS_TYPES = new Set(['SENT', 'FAILED', 'READ']);

/** Start a fake HubSpot API on 127.0.0.1 (a free port). */
export async function startFakeHubSpotApi(): Promise<FakeHubSpotApi> {
  const accessToken = `pat-na1-${randomUUID()}`;
  const requests: HubSpotRequest[] = [];
  const held = new Map<string, HubSpotMessage>();
  const failures: { status: number; keep: boolean }[] = [];

  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json;charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  };
  const error = (res: ServerResponse, status: number, category: string, message: string) =>
    json(res, status, { status: 'error', message, correlationId: randomUUID(), category });

  /** HubSpot's checks of a publish body: what it refuses with a VALIDATION_ERROR. */
  const invalidity = (body: Record<string, unknown>): string | undefined => {
    if (body.type !== undefined && body.type !== 'MESSAGE') return 'type must be MESSAGE';
    if (typeof body.text !== 'string' || body.text === '') return 'text is required';
    if (body.messageDirection !== 'INCOMING' && body.messageDirection !== 'OUTGOING')
      return 'messageDirection must be INCOMING or OUTGOING';
    for (const field of ['integrationThreadId', 'channelAccountId', 'integrationIdempotencyId'])
      if (typeof body[field] !== 'string' || body[field] === '') return `${field} is required`;
    for (const field of ['senders', 'recipients']) {
      const list = body[field];
      if (!Array.isArray(list) || list.length === 0) return `${field} is required`;
      for (const actor of list as Record<string, unknown>[]) {
        const id = actor?.deliveryIdentifier as Record<string, unknown> | undefined;
        if (!id || !DELIVERY_TYPES.has(id.type as string) || typeof id.value !== 'string' || id.value === '')
          return `${field}[].deliveryIdentifier needs a type and a value`;
      }
    }
    return undefined;
  };

  const publish = (res: ServerResponse, channelId: string, body: Record<string, unknown>) => {
    const why = invalidity(body);
    if (why) return error(res, 400, 'VALIDATION_ERROR', why);
    const key = `${channelId}:${String(body.integrationIdempotencyId)}`;
    let message = held.get(key);
    const failure = failures.shift();
    if (!message && (!failure || failure.keep)) {
      message = {
        id: randomBytes(16).toString('hex'),
        channelId,
        channelAccountId: String(body.channelAccountId),
        conversationsThreadId: String(randomInt(1_000_000, 9_999_999)),
        integrationThreadId: String(body.integrationThreadId),
        integrationIdempotencyId: String(body.integrationIdempotencyId),
        text: String(body.text),
        senders: body.senders as unknown[],
        recipients: body.recipients as unknown[],
      };
      held.set(key, message);
    }
    if (failure) return error(res, failure.status, 'INTERNAL_ERROR', 'internal error');
    json(res, 200, {
      type: 'MESSAGE',
      id: message!.id,
      channelId,
      channelAccountId: message!.channelAccountId,
      conversationsThreadId: message!.conversationsThreadId,
      createdAt: new Date().toISOString(),
      createdBy: `I-${channelId}`,
      direction: body.messageDirection,
      text: message!.text,
      senders: message!.senders,
      recipients: message!.recipients,
      attachments: [],
      truncationStatus: 'NOT_TRUNCATED',
      archived: false,
      client: { clientType: 'INTEGRATION', integrationAppId: 1 },
    });
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      let body: Record<string, unknown>;
      try {
        const raw = Buffer.concat(chunks).toString('utf8');
        body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
      } catch {
        return error(res, 400, 'VALIDATION_ERROR', 'Invalid input JSON');
      }
      const recorded: HubSpotRequest = { method: req.method ?? '', path, headers: req.headers, body };
      requests.push(recorded);
      if (req.headers.authorization !== `Bearer ${accessToken}`)
        return error(res, 401, 'INVALID_AUTHENTICATION', 'Authentication credentials not found.');
      const match = PUBLISH.exec(path);
      if (req.method === 'POST' && match) return publish(res, match[1], body);
      const report = REPORT.exec(path);
      if (req.method === 'PATCH' && report) {
        if (!STATUS_TYPES.has(body.statusType as string))
          return error(res, 400, 'VALIDATION_ERROR', 'statusType must be SENT, FAILED or READ');
        return json(res, 200, {
          type: 'MESSAGE',
          id: decodeURIComponent(report[2]),
          channelId: report[1],
          direction: 'OUTGOING',
          status: {
            statusType: body.statusType,
            ...(body.errorMessage ? { failureDetails: { errorMessage: body.errorMessage } } : {}),
          },
        });
      }
      error(res, 404, 'OBJECT_NOT_FOUND', 'resource not found');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    accessToken,
    requests,
    publishes: () => requests.filter((r) => r.method === 'POST' && PUBLISH.test(r.path)),
    messages: () => [...held.values()],
    reports: () =>
      requests.flatMap((r) => {
        const report = r.method === 'PATCH' ? REPORT.exec(r.path) : null;
        return report
          ? [
              {
                channelId: report[1],
                messageId: decodeURIComponent(report[2]),
                statusType: r.body.statusType,
                errorMessage: r.body.errorMessage,
              },
            ]
          : [];
      }),
    failNextPublishes(count, status, options = {}) {
      for (let i = 0; i < count; i++) failures.push({ status, keep: options.keep === true });
    },
    reset() {
      requests.length = 0;
      failures.length = 0;
      held.clear();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The event HubSpot posts when a user replies in a custom channel's thread (OUTGOING_CHANNEL_MESSAGE_CREATED). */
export function outgoingMessageEvent(parts: {
  channelId: string;
  channelAccountId: string;
  threadId: string;
  text: string;
  messageId?: string;
}): Record<string, unknown> {
  const now = new Date().toISOString();
  return {
    type: 'OUTGOING_CHANNEL_MESSAGE_CREATED',
    portalId: '123456',
    channelId: parts.channelId,
    eventTimestamp: now,
    eventId: randomUUID(),
    channelIntegrationThreadIds: [parts.threadId],
    message: {
      id: parts.messageId ?? randomBytes(16).toString('hex'),
      type: 'MESSAGE',
      channelId: parts.channelId,
      channelAccountId: parts.channelAccountId,
      conversationsThreadId: String(randomInt(1_000_000, 9_999_999)),
      createdAt: now,
      createdBy: 'A-1234567',
      senders: [{ actorId: 'A-1234567', name: 'Dana from Support' }],
      recipients: [{ deliveryIdentifier: { type: 'HS_PHONE_NUMBER', value: '+14155550100' } }],
      text: parts.text,
      richText: `<p>${parts.text}</p>`,
      direction: 'OUTGOING',
      truncationStatus: 'NOT_TRUNCATED',
      status: { statusType: 'SENT' },
      attachments: [],
    },
  };
}

/**
 * The raw bytes HubSpot would post to `url` and the headers it signs them with: X-HubSpot-Signature-v3,
 * base64 HMAC-SHA256 under the app's client secret of POST, the URL, the body and the timestamp.
 */
export function signedHubSpotWebhook(
  url: string,
  body: unknown,
  clientSecret: string,
  timestamp = Date.now(),
): { payload: string; headers: Record<string, string> } {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const signature = createHmac('sha256', clientSecret).update(`POST${url}${payload}${timestamp}`).digest('base64');
  return {
    payload,
    headers: {
      'content-type': 'application/json',
      'x-hubspot-signature-v3': signature,
      'x-hubspot-request-timestamp': String(timestamp),
    },
  };
}

import { createHash, createHmac, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A fake HubSpot API on loopback that speaks the custom channels API's wire format: publishing a
// message (POST /conversations/v3/custom-channels/{channelId}/messages) with a Bearer token,
// HubSpot's validation of the body, one message per integrationIdempotencyId (a repeat answers the
// message published already), and HubSpot's error body {status, message, correlationId, category}.
// Reports of an outgoing message's delivery (PATCH .../messages/{messageId}, statusType SENT, FAILED
// or READ) are recorded. Files, as the Files API holds them: an upload (POST /files/v3/files, multipart:
// `file`, `fileName`, `folderPath` or `folderId`, `options` JSON with its required `access`; RETURN_EXISTING
// in EXACT_FOLDER answers the file of the same name and bytes in that folder), a file's signed URL
// (GET /files/v3/files/{fileId}/signed-url: {url, expiresAt, name, extension, type, size}) and the bytes
// at that URL, which answer without a token and 403 once the signature is wrong. A publish's
// `attachments` must name files it holds. Tests point a channel's api_base_url at `baseUrl`. Also: the
// OUTGOING_CHANNEL_MESSAGE_CREATED event HubSpot posts to a custom channel's webhook, and its X-HubSpot-Signature-v3.

/** One request the fake received (a multipart body as its fields; a file as its bytes and type). */
export interface HubSpotRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A file the fake's Files API holds. */
export interface HubSpotFile {
  id: string;
  /** Without its extension, as HubSpot names files. */
  name: string;
  extension: string;
  folderPath: string;
  access: string;
  contentType: string;
  bytes: Buffer;
  /** The size the signed-url answer claims (the bytes' length unless a test says otherwise). */
  size: number;
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
  attachments: unknown[];
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
  /** The files held (uploaded, or added as a HubSpot user's), in order. */
  files(): HubSpotFile[];
  /** The upload calls received, in order (repeats included). */
  uploads(): HubSpotRequest[];
  /**
   * A file a HubSpot user attached to a reply: its id. `size` is what the signed-url answer claims
   * (HubSpot's word on a file too large to fetch).
   */
  addFile(bytes: Buffer, file: { name: string; extension: string; contentType: string; size?: number }): string;
  /** Answer the next `count` signed-url requests with HTTP `status`. */
  failNextSignedUrls(count: number, status: number): void;
  reset(): void;
  close(): Promise<void>;
}

const DELIVERY_TYPES = new Set(['HS_EMAIL_ADDRESS', 'HS_PHONE_NUMBER', 'CHANNEL_SPECIFIC_OPAQUE_ID']);
const PUBLISH = /^\/conversations\/v3\/custom-channels\/([0-9]+)\/messages$/;
const REPORT = /^\/conversations\/v3\/custom-channels\/([0-9]+)\/messages\/([^/]+)$/;
const STATUS_TYPES = new Set(['SENT', 'FAILED', 'READ']);
const UPLOAD = '/files/v3/files';
const SIGNED_URL = /^\/files\/v3\/files\/([^/]+)\/signed-url$/;
const DOWNLOAD = /^\/hubfs-signed\/([0-9]+)\/([^/]+)$/;
const ACCESS = new Set([
  'PUBLIC_INDEXABLE',
  'PUBLIC_NOT_INDEXABLE',
  'HIDDEN_INDEXABLE',
  'HIDDEN_NOT_INDEXABLE',
  'HIDDEN_PRIVATE',
  'PRIVATE',
]);

/** HubSpot's file types, by the file's content type. */
const fileType = (contentType: string) =>
  contentType.startsWith('image/')
    ? 'IMG'
    : contentType.startsWith('video/')
      ? 'MOVIE'
      : contentType.startsWith('audio/')
        ? 'AUDIO'
        : contentType === 'application/pdf' || contentType.startsWith('text/')
          ? 'DOCUMENT'
          : 'OTHER';

/** Start a fake HubSpot API on 127.0.0.1 (a free port). */
export async function startFakeHubSpotApi(): Promise<FakeHubSpotApi> {
  const accessToken = `pat-na1-${randomUUID()}`;
  const requests: HubSpotRequest[] = [];
  const held = new Map<string, HubSpotMessage>();
  const failures: { status: number; keep: boolean }[] = [];
  const files = new Map<string, HubSpotFile>();
  const signedFailures: number[] = [];
  // Signs the download URLs the fake hands out: a URL with another token answers 403.
  const urlSecret = randomBytes(16).toString('hex');
  const urlToken = (id: string) => createHmac('sha256', urlSecret).update(id).digest('hex');
  let origin = '';

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
    if (body.attachments !== undefined) {
      if (!Array.isArray(body.attachments)) return 'attachments must be a list';
      for (const a of body.attachments as Record<string, unknown>[]) {
        if (a?.type !== 'FILE' || typeof a.fileId !== 'string' || !files.has(a.fileId))
          return 'attachments[] must be {type: FILE, fileId} of an uploaded file';
      }
    }
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
        attachments: (body.attachments as unknown[] | undefined) ?? [],
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
      attachments: message!.attachments.map((a) => {
        const file = files.get((a as { fileId: string }).fileId)!;
        return { ...(a as object), name: `${file.name}.${file.extension}`, url: signedUrl(file.id) };
      }),
      truncationStatus: 'NOT_TRUNCATED',
      archived: false,
      client: { clientType: 'INTEGRATION', integrationAppId: 1 },
    });
  };

  const signedUrl = (id: string) => `${origin}/hubfs-signed/${id}/${urlToken(id)}`;

  const holdFile = (file: Omit<HubSpotFile, 'id'>): HubSpotFile => {
    const held = { ...file, id: String(randomInt(100_000_000, 999_999_999)) };
    files.set(held.id, held);
    return held;
  };

  const fileAnswer = (file: HubSpotFile) => ({
    id: file.id,
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    archived: false,
    parentFolderId: String(createHash('md5').update(file.folderPath).digest().readUInt32BE(0)),
    name: file.name,
    path: `${file.folderPath}/${file.name}.${file.extension}`,
    size: file.bytes.length,
    type: fileType(file.contentType),
    extension: file.extension,
    access: file.access,
    isUsableInContent: true,
    url: `${origin}/hubfs/${file.id}/${file.name}.${file.extension}`,
    fileMd5: createHash('md5').update(file.bytes).digest('hex'),
  });

  /** The Files API's upload: multipart, with HubSpot's checks of its fields. */
  const upload = (res: ServerResponse, body: Record<string, unknown>) => {
    const file = body.file as { bytes: Buffer; contentType: string; filename: string } | undefined;
    if (!file || typeof file !== 'object' || !Buffer.isBuffer(file.bytes))
      return error(res, 400, 'VALIDATION_ERROR', 'file is required');
    let options: Record<string, unknown>;
    try {
      options = JSON.parse(typeof body.options === 'string' ? body.options : '') as Record<string, unknown>;
    } catch {
      return error(res, 400, 'VALIDATION_ERROR', 'options must be a JSON object');
    }
    if (!ACCESS.has(options.access as string)) return error(res, 400, 'VALIDATION_ERROR', 'options.access is required');
    if ((body.folderPath === undefined) === (body.folderId === undefined))
      return error(res, 400, 'VALIDATION_ERROR', 'one of folderPath or folderId is required');
    const folderPath = (
      typeof body.folderPath === 'string' ? body.folderPath : `/folder-${String(body.folderId)}`
    ).replace(/\/+$/, '');
    const fullName = typeof body.fileName === 'string' ? body.fileName : file.filename;
    const dot = fullName.lastIndexOf('.');
    const name = dot > 0 ? fullName.slice(0, dot) : fullName;
    const extension = dot > 0 ? fullName.slice(dot + 1).toLowerCase() : '';
    if (options.duplicateValidationStrategy === 'RETURN_EXISTING') {
      const same = [...files.values()].find(
        (f) =>
          (options.duplicateValidationScope !== 'EXACT_FOLDER' || f.folderPath === folderPath) &&
          f.name === name &&
          f.extension === extension &&
          f.bytes.equals(file.bytes),
      );
      if (same) return json(res, 200, fileAnswer(same));
    }
    const contentType = file.contentType || 'application/octet-stream';
    const created = holdFile({
      name,
      extension,
      folderPath,
      access: String(options.access),
      contentType,
      bytes: file.bytes,
      size: file.bytes.length,
    });
    json(res, 201, fileAnswer(created));
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void handle(req, res, Buffer.concat(chunks)));
  });

  const handle = async (req: IncomingMessage, res: ServerResponse, raw: Buffer) => {
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    let body: Record<string, unknown>;
    const contentType = req.headers['content-type'];
    if (contentType?.startsWith('multipart/form-data')) {
      const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
      body = {};
      for (const [name, value] of form)
        body[name] =
          typeof value === 'string'
            ? value
            : { bytes: Buffer.from(await value.arrayBuffer()), contentType: value.type, filename: value.name };
    } else {
      try {
        const text = raw.toString('utf8');
        body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
      } catch {
        return error(res, 400, 'VALIDATION_ERROR', 'Invalid input JSON');
      }
    }
    const recorded: HubSpotRequest = { method: req.method ?? '', path, headers: req.headers, body };
    requests.push(recorded);
    // A signed file URL: its token is the permission, no Bearer token goes with it.
    const download = DOWNLOAD.exec(path);
    if (req.method === 'GET' && download) {
      const file = files.get(download[1]);
      if (!file || download[2] !== urlToken(file.id)) return error(res, 403, 'FORBIDDEN', 'invalid signature');
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length });
      return res.end(file.bytes);
    }
    if (req.headers.authorization !== `Bearer ${accessToken}`)
      return error(res, 401, 'INVALID_AUTHENTICATION', 'Authentication credentials not found.');
    if (req.method === 'POST' && path === UPLOAD) return upload(res, body);
    const signed = SIGNED_URL.exec(path);
    if (req.method === 'GET' && signed) {
      const failure = signedFailures.shift();
      if (failure) return error(res, failure, 'INTERNAL_ERROR', 'internal error');
      const file = files.get(decodeURIComponent(signed[1]));
      if (!file) return error(res, 404, 'OBJECT_NOT_FOUND', `File ${signed[1]} not found`);
      return json(res, 200, {
        url: signedUrl(file.id),
        expiresAt: new Date(Date.now() + 3600_000).toISOString(),
        name: file.name,
        extension: file.extension,
        type: fileType(file.contentType),
        size: file.size,
      });
    }
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
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;

  return {
    baseUrl: origin,
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
    files: () => [...files.values()],
    uploads: () => requests.filter((r) => r.method === 'POST' && r.path === UPLOAD),
    addFile(bytes, file) {
      return holdFile({
        name: file.name,
        extension: file.extension,
        folderPath: '/conversations-attachments',
        access: 'PRIVATE',
        contentType: file.contentType,
        bytes,
        size: file.size ?? bytes.length,
      }).id;
    },
    failNextSignedUrls(count, status) {
      for (let i = 0; i < count; i++) signedFailures.push(status);
    },
    reset() {
      requests.length = 0;
      failures.length = 0;
      signedFailures.length = 0;
      held.clear();
      files.clear();
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
  /** The message's attachments, as HubSpot lists them ({type: FILE, fileId, name, url, fileUsageType}). */
  attachments?: Record<string, unknown>[];
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
      attachments: parts.attachments ?? [],
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

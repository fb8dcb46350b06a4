import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { twilioSignature } from '../../src/channels/twilio-common/twilio.signature.ts';

// A fake Twilio REST API on loopback that speaks Twilio's wire format: form-encoded message
// creation with basic auth, JSON answers with Twilio's fields, error bodies with
// code/message/more_info/status, and MMS media behind the account's credentials (redirected to
// storage, as Twilio does), and call recordings behind the same credentials (`.mp3` or `.wav` of a
// RecordingUrl). Tests point a channel's api_base_url at `baseUrl`.

/** One request the fake received. */
export interface TwilioRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The form parameters (a repeated name keeps its last value; `MediaUrl` is in `mediaUrls`). */
  form: Record<string, string>;
  mediaUrls: string[];
}

/** A Twilio error to answer with. */
export interface TwilioFailure {
  status: number;
  code: number;
  message?: string;
}

export interface FakeTwilioApi {
  /** e.g. http://127.0.0.1:41234 (a channel's api_base_url). */
  baseUrl: string;
  accountSid: string;
  authToken: string;
  requests: TwilioRequest[];
  /** The message creations received, in order. */
  sends(): TwilioRequest[];
  /** Answer the next `count` sends with this error. */
  failNextSends(count: number, failure: TwilioFailure): void;
  /** The recipient replied STOP: sends to it answer 21610. */
  unsubscribe(to: string): void;
  /** Serve an MMS attachment; answers its MediaUrl (behind the account's basic auth). */
  addMedia(bytes: Buffer, contentType: string): string;
  /** Serve a call recording (MP3); answers its RecordingSid and RecordingUrl (no extension, as Twilio gives it). */
  addRecording(bytes: Buffer): { sid: string; url: string };
  reset(): void;
  close(): Promise<void>;
}

const errorBody = (failure: TwilioFailure) => ({
  code: failure.code,
  message: failure.message ?? `Twilio error ${failure.code}`,
  more_info: `https://www.twilio.com/docs/errors/${failure.code}`,
  status: failure.status,
});

const hex = (n: number) => randomBytes(n).toString('hex');

/** Start a fake Twilio API on 127.0.0.1 (a free port). */
export async function startFakeTwilioApi(): Promise<FakeTwilioApi> {
  const accountSid = `AC${hex(16)}`;
  const authToken = hex(16);
  const requests: TwilioRequest[] = [];
  const failures: TwilioFailure[] = [];
  const unsubscribed = new Set<string>();
  const media = new Map<string, { bytes: Buffer; contentType: string }>();
  const recordings = new Map<string, Buffer>();
  let origin = '';
  const basic = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  const accountPath = `/2010-04-01/Accounts/${accountSid}`;

  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  };

  const createMessage = (res: ServerResponse, request: TwilioRequest) => {
    const failure = failures.shift();
    if (failure) return json(res, failure.status, errorBody(failure));
    const { To: to, From: from, MessagingServiceSid: service, Body: body = '' } = request.form;
    if (!to)
      return json(res, 400, errorBody({ status: 400, code: 21604, message: "A 'To' phone number is required." }));
    if (!from && !service)
      return json(res, 400, errorBody({ status: 400, code: 21603, message: "A 'From' phone number is required." }));
    if (!body && request.mediaUrls.length === 0)
      return json(res, 400, errorBody({ status: 400, code: 21602, message: 'Message body is required.' }));
    if ([...body].length > 1600)
      return json(
        res,
        400,
        errorBody({
          status: 400,
          code: 21617,
          message: 'The concatenated message body exceeds the 1600 character limit.',
        }),
      );
    if (unsubscribed.has(to))
      return json(
        res,
        400,
        errorBody({ status: 400, code: 21610, message: 'Attempt to send to unsubscribed recipient' }),
      );
    const sid = `${request.mediaUrls.length > 0 ? 'MM' : 'SM'}${hex(16)}`;
    const now = new Date().toUTCString().replace('GMT', '+0000');
    json(res, 201, {
      account_sid: accountSid,
      api_version: '2010-04-01',
      body,
      date_created: now,
      date_sent: null,
      date_updated: now,
      direction: 'outbound-api',
      error_code: null,
      error_message: null,
      from: from ?? null,
      messaging_service_sid: service ?? null,
      num_media: String(request.mediaUrls.length),
      num_segments: '1',
      price: null,
      price_unit: 'USD',
      sid,
      status: service ? 'accepted' : 'queued',
      subresource_uris: { media: `${accountPath}/Messages/${sid}/Media.json` },
      to,
      uri: `${accountPath}/Messages/${sid}.json`,
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse, request: TwilioRequest) => {
    if (request.path.startsWith('/storage/')) {
      const item = media.get(request.path.slice('/storage/'.length));
      if (!item) return json(res, 404, errorBody({ status: 404, code: 20404, message: 'Not found' }));
      res.writeHead(200, { 'content-type': item.contentType, 'content-length': item.bytes.length });
      return res.end(item.bytes);
    }
    if (req.headers.authorization !== basic)
      return json(res, 401, errorBody({ status: 401, code: 20003, message: 'Authenticate' }));
    if (req.method === 'POST' && request.path === `${accountPath}/Messages.json`) return createMessage(res, request);
    const recordingMatch = new RegExp(`^${accountPath}/Recordings/(RE[0-9a-f]{32})\\.mp3$`).exec(request.path);
    const recording = recordingMatch && recordings.get(recordingMatch[1]);
    if (req.method === 'GET' && recording) {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': recording.length });
      return res.end(recording);
    }
    const mediaMatch = new RegExp(`^${accountPath}/Messages/MM[0-9a-f]{32}/Media/(ME[0-9a-f]{32})$`).exec(request.path);
    if (req.method === 'GET' && mediaMatch && media.has(mediaMatch[1])) {
      res.writeHead(307, { location: `${origin}/storage/${mediaMatch[1]}` });
      return res.end();
    }
    json(
      res,
      404,
      errorBody({ status: 404, code: 20404, message: `The requested resource ${request.path} was not found` }),
    );
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const request: TwilioRequest = {
        method: req.method ?? 'GET',
        path: new URL(req.url ?? '/', 'http://fake').pathname,
        headers: req.headers,
        form: Object.fromEntries(params),
        mediaUrls: params.getAll('MediaUrl'),
      };
      requests.push(request);
      handle(req, res, request);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl: origin,
    accountSid,
    authToken,
    requests,
    sends: () => requests.filter((r) => r.method === 'POST' && r.path === `${accountPath}/Messages.json`),
    failNextSends: (count, failure) => {
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    unsubscribe: (to) => unsubscribed.add(to),
    addMedia: (bytes, contentType) => {
      const id = `ME${hex(16)}`;
      media.set(id, { bytes, contentType });
      return `${origin}${accountPath}/Messages/MM${hex(16)}/Media/${id}`;
    },
    addRecording: (bytes) => {
      const sid = `RE${hex(16)}`;
      recordings.set(sid, bytes);
      return { sid, url: `${origin}${accountPath}/Recordings/${sid}` };
    },
    reset: () => {
      requests.length = 0;
      failures.length = 0;
      unsubscribed.clear();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A webhook request as Twilio posts it: the form body, and X-Twilio-Signature over `url` (the
 * service's public address and the path) and the parameters, keyed by `authToken`.
 */
export function twilioWebhook(url: string, params: Record<string, string>, authToken: string) {
  return {
    payload: new URLSearchParams(params).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(authToken, url, params),
    },
  };
}

/** An incoming SMS's parameters as Twilio posts them. */
export function incomingSms(p: { accountSid: string; from: string; to: string; body: string; sid?: string }) {
  const sid = p.sid ?? `SM${hex(16)}`;
  return {
    ToCountry: 'US',
    ToState: 'CA',
    SmsMessageSid: sid,
    NumMedia: '0',
    ToCity: '',
    FromZip: '',
    SmsSid: sid,
    FromState: 'CA',
    SmsStatus: 'received',
    FromCity: 'SAN FRANCISCO',
    Body: p.body,
    FromCountry: 'US',
    To: p.to,
    ToZip: '',
    NumSegments: '1',
    MessageSid: sid,
    AccountSid: p.accountSid,
    From: p.from,
    ApiVersion: '2010-04-01',
  } as Record<string, string>;
}

/** A status callback's parameters as Twilio posts them. */
export function statusCallback(p: {
  accountSid: string;
  sid: string;
  status: string;
  from: string;
  to: string;
  errorCode?: string;
}) {
  return {
    SmsSid: p.sid,
    SmsStatus: p.status,
    MessageStatus: p.status,
    To: p.to,
    MessageSid: p.sid,
    AccountSid: p.accountSid,
    From: p.from,
    ApiVersion: '2010-04-01',
    ...(p.errorCode ? { ErrorCode: p.errorCode } : {}),
  } as Record<string, string>;
}

/** An incoming call's parameters as Twilio posts them to the number's voice URL. */
export function incomingCall(p: { accountSid: string; from: string; to: string; sid?: string }) {
  return {
    Called: p.to,
    ToState: 'CA',
    CallerCountry: 'US',
    Direction: 'inbound',
    CallerState: 'CA',
    ToZip: '',
    CallSid: p.sid ?? `CA${hex(16)}`,
    To: p.to,
    CallerZip: '',
    ToCountry: 'US',
    CallToken: hex(20),
    CalledZip: '',
    ApiVersion: '2010-04-01',
    CalledCity: '',
    CallStatus: 'ringing',
    From: p.from,
    AccountSid: p.accountSid,
    CalledCountry: 'US',
    CallerCity: '',
    ToCity: '',
    FromCountry: 'US',
    Caller: p.from,
    FromCity: '',
    CalledState: 'CA',
    FromZip: '',
    FromState: 'CA',
  } as Record<string, string>;
}

/** A call status callback's parameters (the number's "Call status changes" URL). */
export function callStatus(p: {
  accountSid: string;
  sid: string;
  status: string;
  from: string;
  to: string;
  duration?: number;
}) {
  return {
    ...incomingCall(p),
    CallStatus: p.status,
    CallbackSource: 'call-progress-events',
    SequenceNumber: '0',
    Timestamp: new Date().toUTCString().replace('GMT', '+0000'),
    ...(p.duration !== undefined
      ? { CallDuration: String(p.duration), Duration: String(Math.ceil(p.duration / 60)) }
      : {}),
  } as Record<string, string>;
}

/** A recording status callback's parameters (no From or To: the callback URL names the number). */
export function recordingCallback(p: {
  accountSid: string;
  callSid: string;
  recordingSid: string;
  url: string;
  duration: number;
}) {
  return {
    RecordingSource: 'RecordVerb',
    RecordingSid: p.recordingSid,
    RecordingUrl: p.url,
    RecordingStatus: 'completed',
    RecordingChannels: '1',
    ErrorCode: '0',
    CallSid: p.callSid,
    RecordingStartTime: new Date().toUTCString().replace('GMT', '+0000'),
    AccountSid: p.accountSid,
    RecordingDuration: String(p.duration),
  } as Record<string, string>;
}

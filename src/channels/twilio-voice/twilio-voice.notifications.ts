import type { InboundDetails, InboundMessage, InboundUpdate, ParsedNotification } from '../channel.types.ts';
import type { WebhookNotification } from '../channel-kind.ts';
import { emptyContent } from '../inbound-content.ts';
import { ProviderError } from '../provider-error.ts';
import { param, type FormParams } from '../twilio-common/twilio.form.ts';

/** Longest identifier or address read from a notification (Twilio's SIDs are 34 characters). */
const MAX_IDENTIFIER_LENGTH = 256;

/**
 * The query parameter naming what a request to the webhook is: absent for an incoming call (the
 * number's "A call comes in" URL), else one of CALLBACK_EVENTS.
 */
export const EVENT_PARAM = 'event';
/** The query parameter naming the channel's number, for callbacks whose parameters do not (a recording's). */
export const NUMBER_PARAM = 'number';

/** What the webhook is called for besides an incoming call, by the URL the service or the console gave Twilio. */
export const CALLBACK_EVENTS = {
  /** The number's "Call status changes" URL: the call's progress and end. */
  status: 'status',
  /** <Record>'s action: the caller's message ended. */
  recorded: 'recorded',
  /** <Dial>'s action: the forwarded call ended. */
  dialed: 'dialed',
  /** A recording's file is ready (recordingStatusCallback). */
  recording: 'recording',
} as const;

/** Call statuses that end a call without it taking place (a missed call). */
const missed = new Set(['busy', 'no-answer', 'failed', 'canceled']);

/** Twilio does not say when it received a call: the time it reached us, with microseconds. */
const now = () => new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

function identifier(params: FormParams, name: string): string | null {
  const value = param(params, name);
  return value !== null && value.length <= MAX_IDENTIFIER_LENGTH ? value : null;
}

/** A whole number of seconds Twilio reported, or null. */
function seconds(params: FormParams, name: string): number | null {
  const value = param(params, name);
  return value !== null && /^[0-9]{1,9}$/.test(value) ? Number(value) : null;
}

const invalidNotification = () => new ProviderError('invalid_notification', 'not a Twilio voice notification', false);

/** Details without the values Twilio left out. */
const present = (details: InboundDetails): InboundDetails =>
  Object.fromEntries(Object.entries(details).filter(([, v]) => v !== null));

/**
 * How a call status moves the call's message: `completed` ends it received; busy, no-answer,
 * failed and canceled end it failed (a missed call); queued, initiated, ringing and in-progress are
 * progress, kept in its metadata only.
 */
function callEnd(status: string, what: string): Pick<InboundUpdate, 'ended' | 'errors'> {
  if (status === 'completed') return { ended: 'received' };
  if (missed.has(status))
    return {
      ended: 'failed',
      errors: [{ code: status, title: null, message: `${what} ended ${status}`, details: null }],
    };
  return {};
}

/**
 * One Twilio Voice webhook request, form parameters as posted, told apart by the URL it was posted
 * to (`?event=`): an incoming call to the channel's number (a voice message, stored PENDING), the
 * number's call status callbacks, the end of <Record> and of <Dial> (the call's end), and a
 * recording's callback (the recording, attached to the call's message). The account is the number
 * called (`To`), or the number the callback URL names when its parameters do not.
 */
export function readTwilioVoiceNotification(body: unknown, query: Record<string, string> = {}): WebhookNotification {
  const params = body as FormParams;
  const callSid = identifier(params, 'CallSid');
  const accountSid = param(params, 'AccountSid');
  const event = query[EVENT_PARAM];
  const account = query[NUMBER_PARAM] ?? identifier(params, 'To');
  if (!callSid || !accountSid || !account || (event !== undefined && !Object.hasOwn(CALLBACK_EVENTS, event)))
    throw invalidNotification();
  const notification: ParsedNotification = { messages: [], statuses: [], contacts: [], updates: [] };
  const update = (fields: Omit<InboundUpdate, 'providerMessageId' | 'to' | 'timestamp'>) =>
    notification.updates!.push({ providerMessageId: callSid, to: account, timestamp: now(), ...fields });

  if (event === undefined && param(params, 'CallbackSource') === null) {
    const from = identifier(params, 'From');
    if (!from) throw invalidNotification();
    notification.messages.push(incomingCall(params, callSid, from, account));
  } else if (event === CALLBACK_EVENTS.recording) {
    const recording = recordingOf(params);
    update({ details: recording.details, ...(recording.media ? { media: recording.media } : {}) });
  } else if (event === CALLBACK_EVENTS.dialed) {
    const status = param(params, 'DialCallStatus');
    if (!status) throw invalidNotification();
    update({
      details: present({ forward_status: status, forward_duration_seconds: seconds(params, 'DialCallDuration') }),
      // Answered or completed, the call took place; otherwise the forwarded call was missed.
      ...(status === 'completed' || status === 'answered'
        ? { ended: 'received' }
        : callEnd(status, 'the forwarded call')),
    });
  } else {
    const status = param(params, 'CallStatus');
    if (!status) throw invalidNotification();
    update({
      details: present({ call_status: status, duration_seconds: seconds(params, 'CallDuration') }),
      // The caller's message was recorded: the call ends with it (the answer hangs up).
      ...(event === CALLBACK_EVENTS.recorded ? { ended: 'received' } : callEnd(status, 'the call')),
    });
  }
  return { accounts: [account], notification };
}

/** An incoming call: a voice message from the caller, still arriving until its end is told. */
function incomingCall(params: FormParams, callSid: string, from: string, to: string): InboundMessage {
  return {
    ...emptyContent('voice'),
    providerMessageId: callSid,
    providerType: 'call',
    from,
    profileName: param(params, 'CallerName'),
    to,
    timestamp: now(),
    context: null,
    errors: [],
    arriving: true,
    details: present({
      call_sid: callSid,
      call_status: param(params, 'CallStatus') ?? 'ringing',
      direction: param(params, 'Direction') ?? 'inbound',
    }),
  };
}

/** A recording callback: its details, and the file once Twilio has it (RecordingStatus completed). */
function recordingOf(params: FormParams): { details: InboundDetails; media?: InboundUpdate['media'] } {
  const sid = identifier(params, 'RecordingSid');
  const url = param(params, 'RecordingUrl');
  const status = param(params, 'RecordingStatus') ?? 'completed';
  if (!sid) throw invalidNotification();
  const details = present({
    recording_sid: sid,
    recording_status: status,
    recording_duration_seconds: seconds(params, 'RecordingDuration'),
  });
  if (status !== 'completed' || !url || !/^https?:\/\//.test(url) || url.length > 2048) return { details };
  return {
    details,
    media: {
      providerMediaId: url,
      mimeType: 'audio/mpeg',
      sha256: null,
      filename: `${sid}.mp3`,
      caption: null,
    },
  };
}

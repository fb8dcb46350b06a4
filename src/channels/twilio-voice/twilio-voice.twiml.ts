import { DEFAULT_MAX_RECORDING_SECONDS, type TwilioVoiceConfig } from './twilio-voice.config.ts';

/** Said before the tone in record mode when the channel sets no greeting. */
const DEFAULT_RECORD_GREETING = 'Please leave a message after the tone.';

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

/** Text and attribute values as XML writes them. */
export function xmlEscape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`);
}

const attributes = (values: Record<string, string | number>) =>
  Object.entries(values)
    .map(([name, value]) => ` ${name}="${xmlEscape(String(value))}"`)
    .join('');

/** A TwiML document of these verbs (each written already). */
const response = (verbs: string[]) => `${XML_DECLARATION}<Response>${verbs.join('')}</Response>`;

/** TwiML that does nothing: Twilio carries on (a status callback needs no instructions). */
export const EMPTY_TWIML = response([]);

/** TwiML that ends the call (after a message was recorded, or the forwarded call ended). */
export const HANGUP_TWIML = response(['<Hangup/>']);

/** Where Twilio asks for the next instructions and posts a recording, on the service's webhook. */
export interface CallbackUrls {
  /** Asked when <Record> or <Dial> ends (their `action`). */
  recorded: string;
  dialed: string;
  /** Told of a recording once its file is ready (`recordingStatusCallback`). */
  recording: string;
}

/**
 * The instructions for an incoming call, from the channel's config: the greeting, then a recording
 * of the caller's message (`record`) or the call put through to `forward_to`, recorded when the
 * channel says so (`forward`).
 */
export function incomingCallTwiml(config: TwilioVoiceConfig, urls: CallbackUrls): string {
  const greeting = config.greeting ?? (config.mode === 'record' ? DEFAULT_RECORD_GREETING : undefined);
  const say = greeting === undefined ? [] : [`<Say>${xmlEscape(greeting)}</Say>`];
  if (config.mode === 'record') {
    const record = attributes({
      maxLength: config.max_recording_seconds ?? DEFAULT_MAX_RECORDING_SECONDS,
      action: urls.recorded,
      method: 'POST',
      recordingStatusCallback: urls.recording,
      recordingStatusCallbackMethod: 'POST',
    });
    return response([...say, `<Record${record}/>`]);
  }
  const dial = attributes({
    action: urls.dialed,
    method: 'POST',
    ...(config.record_forwarded_calls
      ? {
          record: 'record-from-answer',
          recordingStatusCallback: urls.recording,
          recordingStatusCallbackMethod: 'POST',
        }
      : {}),
  });
  return response([...say, `<Dial${dial}><Number>${xmlEscape(config.forward_to ?? '')}</Number></Dial>`]);
}

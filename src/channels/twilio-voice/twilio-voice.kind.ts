import { phoneAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { parseForm } from '../twilio-common/twilio.form.ts';
import { TwilioVoiceConfigSchema, voiceConfigRefusal } from './twilio-voice.config.ts';
import { readTwilioVoiceNotification } from './twilio-voice.notifications.ts';
import { TwilioVoiceProvider } from './twilio-voice.provider.ts';
import { EMPTY_TWIML } from './twilio-voice.twiml.ts';

const receiveDescription = `Twilio Voice webhooks, form-encoded. Without a query: an incoming call to the channel's number (the
number's "A call comes in" URL), stored as a message of type voice (status PENDING) in the caller's conversation and
answered with TwiML made from the channel's config: <Say> the greeting, then <Record> the caller's message (record
mode, up to max_recording_seconds) or <Dial> forward_to (forward mode, recorded when record_forwarded_calls). With
?event=status: the number's "Call status changes" callbacks (completed: the message is RECEIVED with
metadata.duration_seconds; busy, no-answer, failed, canceled: ERROR; the others are kept as metadata.call_status).
?event=recorded and ?event=dialed: the end of the recording or of the forwarded call (answered with <Hangup/>; a
forwarded call not answered is ERROR). ?event=recording: the recording, downloaded as MP3 with the account's
credentials and stored as the message's media (then transcribed when LLM_URL is set). Not under /external/v2 and
without an API key: the channel is found by the number (To, or the URL's number for the callbacks the service
gives Twilio) and X-Twilio-Signature (base64 HMAC-SHA1, keyed by the channel's auth_token, of PUBLIC_URL and this
path with its query, followed by the sorted form parameters) is checked, with AccountSid, before anything is
stored. 401 when the header is missing or wrong, the account is not the channel's, or the number is not a
channel's (nothing is stored); 400 when the body is not a Twilio voice notification. A call is stored once per
CallSid; callbacks told twice change nothing more.`;

/** Twilio Voice: channels of type `voice`, addressed by phone, notified by form-encoded webhook; receive only. */
export const twilioVoiceKind = defineChannelKind({
  kind: 'twilio_voice',
  schema: TwilioVoiceConfigSchema,
  create: (config, http) => new TwilioVoiceProvider(config, http),
  secretFields: ['auth_token'],
  rotatingFields: ['auth_token'],
  changeableFields: [
    'api_base_url',
    'greeting',
    'mode',
    'forward_to',
    'record_forwarded_calls',
    'max_recording_seconds',
  ],
  urlFields: ['api_base_url'],
  lookupFields: [],
  accountField: 'phone_number',
  identifierIsAccount: true,
  title: 'Phone calls (Twilio Voice)',
  channelTypes: ['voice'],
  address: phoneAddress,
  capabilities: {
    serviceWindowHours: null,
    templates: false,
    defaultPacePerSecond: 1,
    mediaKinds: [],
    receiveOnly: true,
  },
  configRefusal: voiceConfigRefusal,
  createDocs: `Voice: \`identifier\` is the number called and \`provider\` is required: {kind: "twilio_voice", account_sid,
auth_token, phone_number (E.164, the number Twilio's calls name), mode ("record" or "forward"), greeting?,
forward_to? (E.164, required in forward mode), record_forwarded_calls?, max_recording_seconds?, api_base_url?}.
Voice channels receive only: sends through them answer 400 \`channel_receive_only\`.`,
  inbound: {
    type: 'webhook',
    aliases: [],
    parse: (raw) => parseForm(raw),
    answer: { contentType: 'text/xml; charset=utf-8', body: EMPTY_TWIML },
    read: readTwilioVoiceNotification,
    refusals: { unknownAccount: 'unknown number', badSignature: 'invalid X-Twilio-Signature' },
    docs: { receive: { summary: 'Twilio Voice webhooks (signed by Twilio)', description: receiveDescription } },
  },
});

import { Type, type Static } from 'typebox';
import { E164_PATTERN, twilioAccountProperties } from '../twilio-common/twilio.account.ts';

/** How long a caller may speak into a recording unless the channel says otherwise. */
export const DEFAULT_MAX_RECORDING_SECONDS = 120;

/**
 * A channel's `provider` object for Twilio Voice, as the operator API takes it. The channel's number
 * is what Twilio's calls name it by; a call is answered with the greeting, then recorded (`record`)
 * or put through to another number (`forward`).
 */
export const TwilioVoiceConfigSchema = Type.Object(
  {
    kind: Type.Literal('twilio_voice'),
    account_sid: twilioAccountProperties.account_sid,
    auth_token: twilioAccountProperties.auth_token,
    phone_number: Type.String({
      pattern: E164_PATTERN,
      description: "The channel's number in E.164 (+15005550006): the number Twilio's calls name",
    }),
    mode: Type.Union([Type.Literal('record'), Type.Literal('forward')], {
      description: 'record: the caller leaves a message; forward: the call is put through to forward_to',
    }),
    greeting: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description:
          'Said to the caller first (Twilio <Say>); in record mode, "Please leave a message after the tone." when absent',
      }),
    ),
    forward_to: Type.Optional(
      Type.String({ pattern: E164_PATTERN, description: 'The number calls are put through to (forward mode), E.164' }),
    ),
    record_forwarded_calls: Type.Optional(
      Type.Boolean({ description: 'Forward mode: record the conversation once answered (default false)' }),
    ),
    max_recording_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 14400,
        description: `Record mode: the longest message, in seconds (default ${DEFAULT_MAX_RECORDING_SECONDS})`,
      }),
    ),
    api_base_url: twilioAccountProperties.api_base_url,
  },
  { additionalProperties: false },
);

/** Configuration of one Twilio Voice channel. */
export type TwilioVoiceConfig = Static<typeof TwilioVoiceConfigSchema>;

/** A forward channel needs the number it forwards to. */
export function voiceConfigRefusal(config: TwilioVoiceConfig): { message: string; path: string } | null {
  if (config.mode === 'forward' && config.forward_to === undefined)
    return { message: 'a voice channel in forward mode needs forward_to', path: '/forward_to' };
  return null;
}

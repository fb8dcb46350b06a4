import { Type, type Static } from 'typebox';
import { E164_PATTERN, twilioAccountProperties } from '../twilio-common/twilio.account.ts';

export { DEFAULT_TWILIO_API_BASE_URL } from '../twilio-common/twilio.account.ts';

/**
 * A channel's `provider` object for Twilio's Messaging API, as the operator API takes it. The
 * channel's number (`from_number`) is what Twilio's notifications name it by; with a messaging
 * service, sends go out through the service's sender pool instead.
 */
export const TwilioConfigSchema = Type.Object(
  {
    kind: Type.Literal('twilio'),
    account_sid: twilioAccountProperties.account_sid,
    auth_token: twilioAccountProperties.auth_token,
    from_number: Type.String({
      pattern: E164_PATTERN,
      description: "The channel's number in E.164 (+15005550006): the sender of sends, the number notifications name",
    }),
    messaging_service_sid: Type.Optional(
      Type.String({
        pattern: '^MG[0-9a-fA-F]{32}$',
        description:
          'Messaging service SID: when set, sends go through the service (MessagingServiceSid) instead of From',
      }),
    ),
    api_base_url: twilioAccountProperties.api_base_url,
  },
  { additionalProperties: false },
);

/** Configuration of one Twilio SMS channel. */
export type TwilioConfig = Static<typeof TwilioConfigSchema>;

import { SegmentedMessage } from 'sms-segments-calculator';

/** Twilio refuses a message body longer than this many characters (error 21617). */
export const MAX_BODY_CHARACTERS = 1600;

/** How a text travels as SMS: its encoding, and the segments a phone reassembles it from. */
export interface SmsSegments {
  encoding: 'GSM-7' | 'UCS-2';
  /** Characters as Twilio counts them for its length limit (code points). */
  characters: number;
  segments: number;
}

/** Counted by Twilio's own calculator (GSM-7 where the GSM alphabet holds the text, UCS-2 otherwise). */
export function smsSegments(text: string): SmsSegments {
  const message = new SegmentedMessage(text);
  return {
    encoding: message.encodingName === 'GSM-7' ? 'GSM-7' : 'UCS-2',
    characters: [...text].length,
    segments: message.segmentsCount,
  };
}

/** Why Twilio would refuse this body, or null. */
export function bodyRefusal(text: string): string | null {
  const { encoding, characters, segments } = smsSegments(text);
  if (characters <= MAX_BODY_CHARACTERS) return null;
  return `an SMS takes at most ${MAX_BODY_CHARACTERS} characters; this one has ${characters} (${encoding}, ${segments} segments)`;
}

/** Twilio refuses a message body longer than this many characters (error 21617). */
export const MAX_BODY_CHARACTERS = 1600;

// GSM 03.38: the basic set takes one septet, the extension set two (an escape and the character).
const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM_EXTENDED = '^{}\\[~]|€\f';
const basic = new Set(GSM_BASIC);
const extended = new Set(GSM_EXTENDED);

/** How a text travels as SMS: its encoding, and the segments a phone reassembles it from. */
export interface SmsSegments {
  encoding: 'GSM-7' | 'UCS-2';
  /** Characters as Twilio counts them for its length limit (code points). */
  characters: number;
  segments: number;
}

/**
 * GSM-7 when every character is in the GSM alphabet (160 septets in one segment, 153 in each of a
 * concatenated message's), UCS-2 otherwise (70 UTF-16 units, 67 when concatenated).
 */
export function smsSegments(text: string): SmsSegments {
  const characters = [...text].length;
  let septets = 0;
  let gsm = true;
  for (const ch of text) {
    if (basic.has(ch)) septets += 1;
    else if (extended.has(ch)) septets += 2;
    else {
      gsm = false;
      break;
    }
  }
  if (gsm) return { encoding: 'GSM-7', characters, segments: septets <= 160 ? 1 : Math.ceil(septets / 153) };
  const units = text.length;
  return { encoding: 'UCS-2', characters, segments: units <= 70 ? 1 : Math.ceil(units / 67) };
}

/** Why Twilio would refuse this body, or null. */
export function bodyRefusal(text: string): string | null {
  const { encoding, characters, segments } = smsSegments(text);
  if (characters <= MAX_BODY_CHARACTERS) return null;
  return `an SMS takes at most ${MAX_BODY_CHARACTERS} characters; this one has ${characters} (${encoding}, ${segments} segments)`;
}

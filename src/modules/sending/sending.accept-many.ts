import type { Db } from '../../db/database.ts';
import { acceptSends, type SendOutcome, type SendPlan } from './sending.accept.ts';

export { plainSendAnswer } from './sending.accept.ts';

/**
 * A send that needs nothing but a contact, its open conversation and a row: free-form, no opt-in,
 * no change to the conversation (bot_status, assignment, team, agent), no template. Those that
 * arrive together are written together (SendingService's batcher), answered plainSendAnswer.
 */
export type PlainSend = Pick<
  SendPlan,
  'businessId' | 'channel' | 'recipient' | 'type' | 'content' | 'text' | 'metadata' | 'claim'
>;

/** The message written for a plain send, or why it was refused (nothing written for it then). */
export type PlainSendOutcome = { messageId: string } | { refused: Error };

/** Plain sends, written by the one writer of sends (acceptSends) with its rules. */
export function acceptPlainSends(trx: Db, sends: PlainSend[]): Promise<{ outcomes: SendOutcome[] }> {
  return acceptSends(trx, sends);
}

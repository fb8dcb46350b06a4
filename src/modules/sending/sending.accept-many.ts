import type { Db } from '../../db/database.ts';
import { enqueueJobs } from '../../jobs/outbox.worker.ts';
import { newId } from '../../lib/ids.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';
import { openConversations } from '../messaging/messaging.conversations.ts';
import { messagingRepository } from '../messaging/messaging.repository.ts';
import { storeAnswerIn, type IdempotencyClaim } from '../idempotency/idempotency.service.ts';
import { messagesCreated } from '../domain-events/domain-events.writer.ts';
import { outboundMessageRow, recipientLockName, type SendPlan } from './sending.accept.ts';
import { blocked, templateRequired } from './sending.content.ts';
import { sendingRepository } from './sending.repository.ts';

/**
 * A send that needs nothing but a contact, its open conversation and a row: free-form, no opt-in,
 * no change to the conversation (bot_status, assignment, team, agent), no template.
 */
export type PlainSend = Pick<SendPlan, 'channel' | 'recipient' | 'type' | 'content' | 'text' | 'metadata'> & {
  businessId: string;
  /** The send's hold on its Idempotency-Key: its answer is stored with it (storeAnswerIn). */
  claim?: IdempotencyClaim;
};

/** The answer of an accepted plain send. */
export const plainSendAnswer = (messageId: string) => ({ message: { uuid: messageId, status: 'enqueued' as const } });

/** The message written for a send, or why it was refused (nothing written for it then). */
export type PlainSendOutcome = { messageId: string } | { refused: Error };

/**
 * Writes plain sends (of any businesses) in the caller's transaction with one statement per step
 * for all of them, with the rules of acceptSend: the recipient is found by phone key (country
 * variants included) under the same lock as contact creation; an opted-out contact is refused
 * (`blocked`), and so is a contact without an inbound message on the channel within 24 hours
 * (`template_required`; a contact that does not exist yet has none, so none is created); then the
 * open conversation (found, created, or reopened with its event), the PENDING messages with their
 * conversations' counters, the outbox jobs and the message_created domain events, in arrival order.
 * A refused send writes nothing and does not affect the others. Answers one outcome per send.
 */
export async function acceptPlainSends(trx: Db, sends: PlainSend[]): Promise<{ outcomes: PlainSendOutcome[] }> {
  const outcomes: (PlainSendOutcome | undefined)[] = sends.map(() => undefined);
  const locks = new Map<string, { businessId: string; key: string }>();
  for (const s of sends)
    locks.set(`${s.businessId}:${recipientLockName(s.recipient)}`, {
      businessId: s.businessId,
      key: recipientLockName(s.recipient),
    });
  await messagingRepository.lockMany(
    trx,
    [...locks.keys()].sort().map((k) => locks.get(k)!),
  );

  const businesses = [...new Set(sends.map((s) => s.businessId))].sort();
  const accepted: { i: number; businessId: string; messageId: string }[] = [];
  for (const businessId of businesses) {
    const mine = sends.flatMap((s, i) => (s.businessId === businessId ? [i] : []));
    const contacts = await messagingRepository.contactsByPhoneKey(trx, businessId, [
      ...new Set(mine.map((i) => sends[i].recipient.key)),
    ]);
    const candidates: { i: number; contact: ContactRow }[] = [];
    for (const i of mine) {
      const contact = contacts.get(sends[i].recipient.key);
      if (!contact) outcomes[i] = { refused: templateRequired() };
      else if (contact.collected_data.opted_out === true) outcomes[i] = { refused: blocked() };
      else candidates.push({ i, contact });
    }
    const pairKey = (c: { i: number; contact: ContactRow }) => `${c.contact.id}:${sends[c.i].channel.id}`;
    const open = await sendingRepository.inServiceWindows(
      trx,
      businessId,
      candidates.map((c) => ({
        contact_id: c.contact.id,
        channel_id: sends[c.i].channel.id,
        channel: sends[c.i].channel.type,
      })),
    );
    const writable = candidates.filter((c) => {
      if (open.has(pairKey(c))) return true;
      outcomes[c.i] = { refused: templateRequired() };
      return false;
    });
    if (writable.length === 0) continue;

    const conversations = await openConversations(
      trx,
      businessId,
      writable.map((c) => ({
        contactId: c.contact.id,
        channel: sends[c.i].channel.type,
        channelId: sends[c.i].channel.id,
        tags: c.contact.tags,
      })),
      { actorType: 'api', origin: 'api' },
    );
    const rows = writable.map((c) => {
      const send = sends[c.i];
      return outboundMessageRow(
        businessId,
        newId(),
        { ...send, templateId: null },
        { conversationId: conversations.get(pairKey(c))!.id, contactId: c.contact.id },
      );
    });
    await messagingRepository.insertMessages(trx, businessId, rows);
    writable.forEach((c, n) => {
      const messageId = rows[n].id;
      outcomes[c.i] = { messageId };
      accepted.push({ i: c.i, businessId, messageId });
    });
    await messagesCreated(
      trx,
      businessId,
      rows.map((r) => r.id),
    );
  }
  accepted.sort((a, b) => a.i - b.i);
  await enqueueJobs(
    trx,
    accepted.map((a) => ({ businessId: a.businessId, kind: 'send', refId: a.messageId })),
  );
  // A claim taken over fails the batch; the batcher then writes each send alone, and only that one fails.
  for (const a of accepted) await storeAnswerIn(trx, sends[a.i].claim, 200, plainSendAnswer(a.messageId));
  return { outcomes: outcomes.map((o) => o!) };
}

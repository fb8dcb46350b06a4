import type { StatusUpdate } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import { messageStatusRepository } from '../messages/message-status.repository.ts';
import type { InboundEntry } from './inbound.store.ts';

/**
 * Sorts the echoes of this service's own sends out of a notification's messages. A provider that
 * echoes no id of ours (Instagram, TikTok) may tell the echo before the send's answer is stored;
 * stored as it is, it would be a second message, a person's, and the send's answer would then find
 * its provider id taken. Such an echo, whose provider id no message holds (`known`, read under the
 * senders' locks) and which matches a send awaiting its answer, is that send's receipt instead
 * (applied by reference, as Messenger's echoes carrying our id are). Every other entry is kept.
 */
export async function sortOutEchoedSends<Entry extends InboundEntry>(
  trx: Db,
  entries: Entry[],
  known: ReadonlyMap<string, ReadonlySet<string>>,
): Promise<{ entries: Entry[]; receipts: Map<Entry, StatusUpdate> }> {
  const kept: Entry[] = [];
  const receipts = new Map<Entry, StatusUpdate>();
  for (const entry of entries) {
    const { channel, message } = entry;
    const held = known.get(channel.business_id)?.has(`${channel.id}:${message.providerMessageId}`) ?? false;
    const sent =
      message.echo && !held
        ? await messageStatusRepository.sendAwaitingAnswer(trx, channel.business_id, {
            channelId: channel.id,
            recipient: message.from,
            type: message.type,
            text: message.text ?? '',
          })
        : undefined;
    if (!sent) {
      kept.push(entry);
      continue;
    }
    receipts.set(entry, {
      providerMessageId: message.providerMessageId,
      status: 'sent',
      timestamp: message.timestamp,
      recipient: message.from,
      from: message.to,
      errors: [],
      reference: sent,
    });
  }
  return { entries: kept, receipts };
}

import type { InboundUpdate } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import type { MessageChange } from '../domain-events/domain-events.writer.ts';
import { enqueueJobs } from '../../jobs/outbox.worker.ts';
import type { ChannelRow } from '../channels/channels.service.ts';
import { MEDIA_FETCH_JOB } from '../media/media.fetch-job.ts';
import { mediaRepository } from '../media/media.repository.ts';
import { messageStatusRepository } from '../messages/message-status.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { errorText } from './inbound.content.ts';

/** What one update did: the status it moved, what else changed, whether an attachment waits for its download. */
export interface AppliedUpdate {
  moved?: { id: string; status: string };
  changed: { id: string; change: MessageChange }[];
  mediaQueued: boolean;
}

/**
 * Applies later news of an inbound message (a call's progress, end and recording) under the
 * message's row lock, so a callback and its redelivery apply one after the other. Undefined when the
 * channel has no inbound message with that provider id. Progress (no end, no attachment) told after
 * the message ended is late and changes nothing; an end moves the status only from PENDING (a second
 * end keeps the first's status, but its details, the call's duration say, are kept); an attachment
 * is added once per provider media id, with its download job.
 */
export async function applyInboundUpdate(
  trx: Db,
  channel: ChannelRow,
  update: InboundUpdate,
): Promise<AppliedUpdate | undefined> {
  const businessId = channel.business_id;
  const message = await messagesRepository.lockInbound(trx, businessId, channel.id, update.providerMessageId);
  if (!message) return undefined;
  if (message.status !== 'PENDING' && !update.ended && !update.media) return { changed: [], mediaQueued: false };
  const changed: AppliedUpdate['changed'] = [];
  if (update.details && Object.keys(update.details).length > 0) {
    await messagesRepository.mergeMetadata(trx, businessId, message.id, update.details);
    changed.push({ id: message.id, change: 'details' });
  }
  const moved = update.ended
    ? await messageStatusRepository.endArrival(
        trx,
        businessId,
        message.id,
        update.ended === 'received' ? 'RECEIVED' : 'ERROR',
        {
          statusAt: update.timestamp,
          error: update.ended === 'failed' ? errorText(update.errors ?? []) : null,
        },
      )
    : undefined;
  let mediaQueued = false;
  if (update.media) {
    const { providerMediaId, mimeType, filename, sha256 } = update.media;
    mediaQueued = await mediaRepository.attachLater(trx, businessId, {
      message_id: message.id,
      provider_media_id: providerMediaId,
      content_type: mimeType,
      filename,
      sha256,
    });
    if (mediaQueued) {
      await enqueueJobs(trx, [{ businessId, kind: MEDIA_FETCH_JOB, refId: message.id }]);
      changed.push({ id: message.id, change: 'attachment' });
    }
  }
  return { ...(moved ? { moved } : {}), changed, mediaQueued };
}

import type { ProviderDeliveryStatus } from './channel.types.ts';

/**
 * Stored message states (docs/ARCHITECTURE.md#message-status): inbound messages are RECEIVED; outbound ones go
 * PENDING (queued) -> SENT (accepted by the provider) -> DELIVERED -> READ, or end in ERROR.
 */
export type MessageStatus = 'PENDING' | 'SENT' | 'DELIVERED' | 'READ' | 'ERROR' | 'RECEIVED';

const rank: Partial<Record<MessageStatus, number>> = { PENDING: 0, SENT: 1, DELIVERED: 2, READ: 3 };

/**
 * Whether a message in status `from` may move to `to`. Receipts arrive late, twice and out of
 * order, and the worker may record SENT after Meta's "delivered" receipt already came in, so every
 * writer asks this first and a status never moves backwards:
 * - forward along PENDING < SENT < DELIVERED < READ is allowed, skipping steps included
 *   (PENDING -> READ when the earlier receipts were lost); backwards or the same status is not;
 * - ERROR is reachable only from PENDING or SENT: a "failed" receipt after DELIVERED or READ
 *   contradicts a receipt that proved the message arrived, so it is ignored;
 * - ERROR is final: a failed message does not come back (Meta's "failed" is final for a wamid,
 *   and a retried send is a new provider message). The one exception is not a move by this rule:
 *   a send that has no wamid because its answer was lost takes the status of its first receipt
 *   (messageStatusRepository.recordByReference);
 * - RECEIVED belongs to inbound messages and neither moves nor is reached by a receipt. An inbound
 *   message that takes time to arrive (a phone call) is PENDING while it lasts, and its end moves it
 *   once to RECEIVED or ERROR (messageStatusRepository.endArrival), never by this rule.
 */
export function canMoveStatus(from: MessageStatus, to: MessageStatus): boolean {
  if (from === to || from === 'ERROR' || from === 'RECEIVED' || to === 'RECEIVED') return false;
  const fromRank = rank[from] as number;
  if (to === 'ERROR') return fromRank <= (rank.SENT as number);
  return (rank[to] as number) > fromRank;
}

const fromDelivery: Record<ProviderDeliveryStatus, MessageStatus> = {
  sent: 'SENT',
  delivered: 'DELIVERED',
  read: 'READ',
  failed: 'ERROR',
};

/** The stored status a provider delivery receipt stands for. */
export function messageStatusOf(status: ProviderDeliveryStatus): MessageStatus {
  return fromDelivery[status];
}

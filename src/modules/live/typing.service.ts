import type { Db } from '../../db/database.ts';
import { notFound } from '../../lib/domain-errors.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import { usersRepository } from '../users/users.repository.ts';
import type { LiveSignals } from './live.signals.ts';

/**
 * Who is writing in a conversation, as a moment's signal: a team member in the dashboard (shown to
 * the contact in the website widget and to the rest of the team), or the contact in the widget
 * (VisitorsService). Nothing is stored.
 */
export class TypingService {
  constructor(
    private readonly db: Db,
    private readonly signals: LiveSignals,
  ) {}

  /** A team member started or stopped writing in a conversation of their business (404 for any other). */
  async team(businessId: string, userId: string, conversationId: string, typing: boolean): Promise<void> {
    const conversation = await conversationOpsRepository.get(this.db, businessId, conversationId);
    if (!conversation) throw notFound('conversation');
    const user = await usersRepository.find(this.db, businessId, userId);
    await this.signals.send(businessId, {
      type: 'typing',
      conversation_id: conversation.id,
      contact_id: conversation.contact_id,
      by: 'user',
      user_id: userId,
      name: user?.name ?? null,
      typing,
    });
  }
}

import { useParams } from 'react-router';
import { ConversationList } from '../inbox/conversation-list';
import { ConversationView } from '../inbox/conversation-view';
import { useDocumentTitle } from '../shell/document-title';
import styles from '../inbox/inbox.module.css';

/**
 * The inbox: the conversation list beside the open conversation (/conversations/:conversationId);
 * on a phone, one of them.
 */
export function InboxPage() {
  useDocumentTitle('Inbox');
  const { conversationId } = useParams();
  return (
    <div className={styles.inbox} data-open={conversationId ? 'true' : 'false'}>
      <ConversationList openId={conversationId} />
      <section className={styles.thread} aria-label="Conversation">
        {conversationId ? (
          <ConversationView key={conversationId} conversationId={conversationId} />
        ) : (
          <p className={styles.empty}>Choose a conversation to read it here.</p>
        )}
      </section>
    </div>
  );
}

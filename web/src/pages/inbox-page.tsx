import { useParams } from 'react-router';
import { useDocumentTitle } from '../shell/document-title';
import styles from './inbox-page.module.css';

/** The inbox: the conversation list beside the open conversation (/conversations/:conversationId). */
export function InboxPage() {
  useDocumentTitle('Inbox');
  const { conversationId } = useParams();
  return (
    <div className={styles.inbox}>
      <section className={styles.list} aria-labelledby="inbox-title">
        <header className={styles.header}>
          <h1 id="inbox-title">Inbox</h1>
        </header>
        <p className={styles.empty}>No conversations to show yet.</p>
      </section>
      <section className={styles.thread} aria-label="Conversation">
        <p className={styles.empty}>
          {conversationId ? 'This conversation cannot be shown yet.' : 'Choose a conversation to read it here.'}
        </p>
      </section>
    </div>
  );
}

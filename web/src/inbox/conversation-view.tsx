import { useCallback, useEffect, useRef, useState } from 'react';
import { Link } from 'react-router';
import { api, errorMessage } from '../api/client';
import { READ_EVENT, useLiveReload } from '../live/live';
import { ConversationHeader } from './conversation-header';
import { contactName, type ConversationDetail, type ThreadItem } from './inbox-types';
import { ReplyBox } from './reply-box';
import { useTypingOthers } from './use-typing';
import { useSignedIn } from '../session/session';
import { EventLine, MessageBubble } from './thread-item';
import styles from './inbox.module.css';

/** Newest first, by id: a fresher copy (a new status) replaces the one shown. */
function merge(fresh: ThreadItem[], shown: ThreadItem[]): ThreadItem[] {
  const byId = new Map(shown.map((item) => [item.id, item]));
  for (const item of fresh) byId.set(item.id, item);
  return [...byId.values()].sort((a, b) =>
    a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
  );
}

/** One conversation: its header and actions, the thread (older items on scroll up), the reply box. */
export function ConversationView({ conversationId }: { conversationId: string }) {
  const [detail, setDetail] = useState<ConversationDetail | undefined>();
  const [items, setItems] = useState<ThreadItem[]>([]);
  const [older, setOlder] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | undefined>();
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const writers = useTypingOthers(conversationId, useSignedIn().user.id);

  const loadDetail = useCallback(async () => {
    const { data, error, response } = await api.GET('/dashboard/api/conversations/{id}', {
      params: { path: { id: conversationId } },
    });
    if (data) setDetail(data);
    else setFailure(response.status === 404 ? 'not_found' : errorMessage(error, response));
  }, [conversationId]);

  const loadLatest = useCallback(
    async (first: boolean) => {
      const { data } = await api.GET('/dashboard/api/conversations/{id}/thread', {
        params: { path: { id: conversationId }, query: { limit: 50 } },
      });
      if (!data) return;
      setItems((shown) => (first ? data.items : merge(data.items, shown)));
      if (first) setOlder(data.next_cursor);
      // Opening or reading a conversation marks it read.
      void api
        .POST('/dashboard/api/conversations/{id}/read', { params: { path: { id: conversationId } }, body: {} })
        .then(() => window.dispatchEvent(new Event(READ_EVENT)));
    },
    [conversationId],
  );

  useEffect(() => {
    // Both set state only once the service answers, never during the effect itself.
    // eslint-disable-next-line react-hooks/set-state-in-effect
    void loadDetail();
    void loadLatest(true);
  }, [loadDetail, loadLatest]);

  useLiveReload(
    () => {
      void loadDetail();
      void loadLatest(false);
    },
    (signal) => signal.kind === 'reset' || signal.event.conversation_id === conversationId,
  );

  // The newest message stays in view unless the reader scrolled up.
  useEffect(() => {
    const box = scroller.current;
    if (box && stick.current) box.scrollTop = box.scrollHeight;
  }, [items]);

  const loadOlder = async () => {
    if (!older) return;
    const box = scroller.current;
    const fromBottom = box ? box.scrollHeight - box.scrollTop : 0;
    const { data } = await api.GET('/dashboard/api/conversations/{id}/thread', {
      params: { path: { id: conversationId }, query: { limit: 50, cursor: older } },
    });
    if (!data) return;
    stick.current = false;
    setItems((shown) => merge(data.items, shown));
    setOlder(data.next_cursor);
    requestAnimationFrame(() => box && (box.scrollTop = box.scrollHeight - fromBottom));
  };

  const onScroll = () => {
    const box = scroller.current;
    if (!box) return;
    stick.current = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    if (box.scrollTop < 60 && older) void loadOlder();
  };

  if (failure === 'not_found')
    return (
      <div className={styles.missing}>
        <h2>Conversation not found</h2>
        <p>It does not exist, or it belongs to another business.</p>
        <Link to="/">Back to the inbox</Link>
      </div>
    );
  if (failure)
    return (
      <p role="alert" className={styles.error}>
        The conversation could not be loaded: {failure}.
      </p>
    );
  if (!detail) return <p className={styles.empty}>Loading…</p>;

  const shown = [...items].reverse();
  return (
    <article className={styles.conversation} aria-label={`Conversation with ${contactName(detail.contact)}`}>
      <ConversationHeader detail={detail} items={items} onChange={() => void loadDetail()} />
      <div ref={scroller} className={styles.threadScroll} onScroll={onScroll}>
        {older && (
          <button type="button" className={`button ${styles.more}`} onClick={() => void loadOlder()}>
            Load older messages
          </button>
        )}
        <ol className={styles.items} aria-label="Messages">
          {shown.map((item) =>
            item.kind === 'message' ? (
              <MessageBubble key={item.id} message={item} />
            ) : (
              <EventLine key={item.id} event={item} />
            ),
          )}
        </ol>
      </div>
      <p className={styles.typing} role="status" aria-live="polite">
        {writers.length > 0 && `${writers.join(', ')} ${writers.length > 1 ? 'are' : 'is'} typing…`}
      </p>
      <ReplyBox conversationId={conversationId} onSent={() => void loadLatest(false)} />
    </article>
  );
}

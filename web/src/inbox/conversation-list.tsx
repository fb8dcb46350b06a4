import { useCallback, useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, errorMessage } from '../api/client';
import { READ_EVENT, useLiveReload } from '../live/live';
import { InboxFilters, queryOf } from './inbox-filters';
import { contactName, preview, time, type InboxConversation } from './inbox-types';
import styles from './inbox.module.css';

const PAGE = 30;

/** Newest activity first; a row present in both keeps the fresher copy. */
function merge(fresh: InboxConversation[], older: InboxConversation[]): InboxConversation[] {
  const ids = new Set(fresh.map((row) => row.id));
  const oldest = fresh.at(-1)?.last_activity_at ?? '';
  return [...fresh, ...older.filter((row) => !ids.has(row.id) && row.last_activity_at <= oldest)];
}

/** The inbox's list: filters from the URL, pages by cursor, live updates, arrow keys and j/k between rows. */
export function ConversationList({ openId }: { openId: string | undefined }) {
  const [params] = useSearchParams();
  const search = params.toString();
  const [rows, setRows] = useState<InboxConversation[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [state, setState] = useState<'loading' | 'ready' | 'error'>('loading');
  const [error, setError] = useState('');
  const listRef = useRef<HTMLUListElement>(null);
  // Reloads overlap (a live event and a read mark together): an answer older than one already shown is dropped,
  // or a slower first request would put back rows as they were before the change that triggered the second.
  const asked = useRef(0);
  const shown = useRef(0);

  const load = useCallback(
    async (after: string | null, refresh: boolean) => {
      const query = { ...queryOf(new URLSearchParams(search)), limit: PAGE, ...(after ? { cursor: after } : {}) };
      const ticket = ++asked.current;
      const { data, error: failure, response } = await api.GET('/dashboard/api/conversations', { params: { query } });
      if (ticket < shown.current) return;
      shown.current = ticket;
      if (!data) {
        setError(errorMessage(failure, response));
        setState('error');
        return;
      }
      setState('ready');
      if (refresh) {
        setRows((current) => merge(data.conversations, current));
      } else {
        setRows((current) => (after ? [...current, ...data.conversations] : data.conversations));
        setCursor(data.next_cursor);
      }
    },
    [search],
  );

  // A new filter replaces the rows when its first page arrives.
  // load sets state only once the service answers, never during the effect itself.
  // eslint-disable-next-line react-hooks/set-state-in-effect
  useEffect(() => void load(null, false), [load]);

  useLiveReload(
    () => void load(null, true),
    (signal) => signal.kind === 'reset' || signal.event.conversation_id !== null,
  );

  useEffect(() => {
    const refresh = () => void load(null, true);
    window.addEventListener(READ_EVENT, refresh);
    return () => window.removeEventListener(READ_EVENT, refresh);
  }, [load]);

  // Arrow keys and j/k move between rows; Enter opens the focused one (it is a link).
  const move = (event: KeyboardEvent) => {
    const step = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1 }[event.key];
    if (!step || event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
    const links = Array.from(listRef.current?.querySelectorAll<HTMLAnchorElement>('a') ?? []);
    const at = links.indexOf(document.activeElement as HTMLAnchorElement);
    const next = links[Math.max(0, Math.min(links.length - 1, at + step))];
    if (next) {
      event.preventDefault();
      next.focus();
    }
  };

  return (
    <section className={styles.list} aria-labelledby="inbox-title" onKeyDown={move}>
      <header className={styles.listHeader}>
        <h1 id="inbox-title">Inbox</h1>
      </header>
      <InboxFilters />
      {state === 'error' && (
        <p role="alert" className={styles.error}>
          The conversations could not be loaded: {error}.
        </p>
      )}
      {state === 'loading' && <p className={styles.empty}>Loading…</p>}
      {state === 'ready' && rows.length === 0 && <p className={styles.empty}>No conversations match.</p>}
      <ul ref={listRef} className={styles.rows} aria-label="Conversations">
        {rows.map((row) => (
          <Row key={row.id} row={row} open={row.id === openId} search={search} />
        ))}
      </ul>
      {cursor && state === 'ready' && (
        <button type="button" className={`button ${styles.more}`} onClick={() => void load(cursor, false)}>
          Load more
        </button>
      )}
    </section>
  );
}

function Row({ row, open, search }: { row: InboxConversation; open: boolean; search: string }) {
  const name = contactName(row.contact);
  const unread = row.unread_count > 0 && !open;
  return (
    <li>
      <Link
        to={{ pathname: `/conversations/${row.id}`, search }}
        className={`${styles.row} ${open ? styles.rowOpen : ''}`}
        aria-current={open ? 'true' : undefined}
      >
        <span className={styles.rowTop}>
          <span className={`${styles.name} ${unread ? styles.unreadName : ''}`}>{name}</span>
          <time className={styles.when} dateTime={row.last_activity_at}>
            {time(row.last_activity_at)}
          </time>
        </span>
        <span className={styles.rowBottom}>
          <span className={styles.snippet}>
            {row.last_message
              ? `${row.last_message.direction === 'outbound' ? 'You: ' : ''}${preview(row.last_message)}`
              : 'No messages yet'}
          </span>
          {unread && (
            <span className={styles.badge} aria-label={`${row.unread_count >= 99 ? '99+' : row.unread_count} unread`}>
              {row.unread_count >= 99 ? '99+' : row.unread_count}
            </span>
          )}
        </span>
        <span className={styles.meta}>
          <span className={styles.chip}>{row.channel.name ?? row.channel.type}</span>
          {row.manual_control ? <span className={styles.chip}>Manual</span> : <span className={styles.chip}>AI</span>}
          {row.assignee.user && <span className={styles.chip}>{row.assignee.user.name}</span>}
          {row.closed && <span className={styles.chip}>Closed</span>}
        </span>
      </Link>
    </li>
  );
}

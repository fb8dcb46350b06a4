import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { api, errorMessage } from '../api/client';
import { contactName, type ConversationDetail } from './inbox-types';
import styles from './inbox.module.css';

type Action = 'resolve' | 'archive' | 'unarchive';

/** The conversation's contact, channel and assignee, manual control, resolve and archive. */
export function ConversationHeader({ detail, onChange }: { detail: ConversationDetail; onChange: () => void }) {
  const { conversation, contact } = detail;
  const id = conversation.id;
  const [users, setUsers] = useState<{ id: string; name: string }[]>([]);
  const [error, setError] = useState('');

  useEffect(() => {
    void api.GET('/dashboard/api/users').then(({ data }) => {
      const list = (data as { users?: { id: string; name: string; email: string }[] } | undefined)?.users ?? [];
      setUsers(list.map((user) => ({ id: user.id, name: user.name || user.email })));
    });
  }, []);

  const done = ({ error: failure, response }: { error?: unknown; response: Response }) => {
    if (response.ok) {
      setError('');
      onChange();
    } else setError(errorMessage(failure, response));
  };
  const control = (manual: boolean, locked?: boolean) =>
    void api
      .PUT('/dashboard/api/conversations/{id}/control', {
        params: { path: { id } },
        body: locked === undefined ? { manual } : { manual, locked },
      })
      .then(done);
  const act = (action: Action) => {
    const init = { params: { path: { id } }, body: {} };
    const call =
      action === 'resolve'
        ? api.POST('/dashboard/api/conversations/{id}/resolve', init)
        : action === 'archive'
          ? api.POST('/dashboard/api/conversations/{id}/archive', init)
          : api.POST('/dashboard/api/conversations/{id}/unarchive', init);
    void call.then(done);
  };
  const assign = (userId: string) =>
    void api
      .PUT('/dashboard/api/conversations/{id}/assignee', {
        params: { path: { id } },
        body: userId ? { user_id: userId } : {},
      })
      .then(done);

  return (
    <header className={styles.convHeader}>
      <Link to="/" className={styles.back}>
        ← Inbox
      </Link>
      <div className={styles.who}>
        <h2>
          <Link to={`/contacts/${contact.id}`}>{contactName(contact)}</Link>
        </h2>
        <p className={styles.note}>
          {conversation.channel.name ?? conversation.channel.type}
          {contact.phone_number && ` · +${contact.phone_number}`}
          {conversation.closed && ' · Closed'}
          {conversation.assignee.team && ` · Team ${conversation.assignee.team.name}`}
          {conversation.assignee.agent && ` · AI agent ${conversation.assignee.agent.name}`}
        </p>
      </div>
      <div className={styles.actions}>
        <label className="field">
          <span className="field-label">Assignee</span>
          <select value={conversation.assignee.user?.id ?? ''} onChange={(event) => assign(event.target.value)}>
            <option value="">Unassigned</option>
            {users.map((user) => (
              <option key={user.id} value={user.id}>
                {user.name}
              </option>
            ))}
          </select>
        </label>
        {conversation.manual_control ? (
          <button type="button" className="button" onClick={() => control(false)}>
            Hand back to AI
          </button>
        ) : (
          <button type="button" className="button" onClick={() => control(true)}>
            Take over
          </button>
        )}
        <button
          type="button"
          className="button"
          aria-pressed={conversation.manual_control_locked}
          onClick={() => control(true, !conversation.manual_control_locked)}
        >
          {conversation.manual_control_locked ? 'Unpin' : 'Pin'}
        </button>
        <button type="button" className="button" onClick={() => act('resolve')}>
          Resolve
        </button>
        {conversation.closed ? (
          <button type="button" className="button" onClick={() => act('unarchive')}>
            Unarchive
          </button>
        ) : (
          <button type="button" className="button" onClick={() => act('archive')}>
            Archive
          </button>
        )}
      </div>
      {error && (
        <p role="alert" className={styles.error}>
          {error}
        </p>
      )}
    </header>
  );
}

import { useState } from 'react';
import { Link } from 'react-router';
import { api, errorMessage } from '../api/client';
import type { paths } from '../api/schema';
import { useSignedIn } from '../session/session';
import { agentSilence, AiRunsDialog } from './ai-runs';
import { contactName, type ConversationDetail, type ThreadItem } from './inbox-types';
import { useAssignees, type Named } from './use-assignees';
import styles from './inbox.module.css';

type Action = 'resolve' | 'archive' | 'unarchive';
type AssigneeChange = NonNullable<
  paths['/dashboard/api/conversations/{id}/assignee']['put']['requestBody']
>['content']['application/json'];

/** The list with the current one added when it is not in it (a list still loading, or longer than one page). */
const withCurrent = (list: Named[], current: Named | null) =>
  current && !list.some((item) => item.id === current.id) ? [current, ...list] : list;

/**
 * The conversation's contact and channel; its team, user and AI agent, each changed on its own
 * ("Assign to me" for the signed-in user), and why the agent does not answer when it does not; manual
 * control, resolve and archive; the agent's runs.
 */
export function ConversationHeader({
  detail,
  items,
  onChange,
}: {
  detail: ConversationDetail;
  /** The thread as loaded. */
  items: ThreadItem[];
  onChange: () => void;
}) {
  const { conversation, contact } = detail;
  const id = conversation.id;
  const me = useSignedIn().user;
  const { users, teams, agents } = useAssignees();
  const [error, setError] = useState('');
  const assigned = conversation.assignee.agent;
  // The agents' list says whether each answers; until it is read, the assigned one is taken to.
  const agent = assigned && { ...assigned, inactive_reason: null, ...agents.find((a) => a.id === assigned.id) };
  const silence = agentSilence(agent, conversation.manual_control);

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
  const assign = (change: AssigneeChange) =>
    void api.PUT('/dashboard/api/conversations/{id}/assignee', { params: { path: { id } }, body: change }).then(done);

  const picker = (label: string, field: keyof AssigneeChange, list: Named[], current: Named | null, none: string) => (
    <label className="field">
      <span className="field-label">{label}</span>
      <select value={current?.id ?? ''} onChange={(event) => assign({ [field]: event.target.value || null })}>
        <option value="">{none}</option>
        {withCurrent(list, current).map((item) => (
          <option key={item.id} value={item.id}>
            {item.name}
          </option>
        ))}
      </select>
    </label>
  );

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
        </p>
        {agent?.inactive_reason && <p className={styles.silence}>{silence}</p>}
      </div>
      <div className={styles.actions} role="group" aria-label="Assignment">
        {picker('Team', 'team_id', teams, conversation.assignee.team, 'No team')}
        {picker('Assignee', 'user_id', users, conversation.assignee.user, 'Unassigned')}
        {conversation.assignee.user?.id !== me.id && (
          <button type="button" className="button" onClick={() => assign({ user_id: me.id })}>
            Assign to me
          </button>
        )}
        {picker('AI agent', 'agent_id', agents, conversation.assignee.agent, 'No AI agent')}
      </div>
      <div className={styles.actions}>
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
        <AiRunsDialog conversationId={id} silence={silence} items={items} />
      </div>
      {error && (
        <p role="alert" className={styles.error}>
          {error}
        </p>
      )}
    </header>
  );
}

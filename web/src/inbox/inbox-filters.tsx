import { useEffect, useState } from 'react';
import { useSearchParams } from 'react-router';
import type { InboxQuery } from './inbox-types';
import { useAssignees } from './use-assignees';

const CHANNELS = ['whatsapp', 'instagram', 'messenger', 'email', 'sms', 'web_embed'];

/** The list's query from the page's URL: the filters stay in the address, so a link or a reload keeps them. */
export function queryOf(params: URLSearchParams): Omit<InboxQuery, 'limit'> {
  const query: Record<string, string> = {};
  for (const key of ['status', 'channel', 'team', 'assignee', 'control', 'q']) {
    const value = params.get(key);
    if (value) query[key] = value;
  }
  return query;
}

/** The status, channel, team, assignee and control filters and the search box, written into the URL's query. */
export function InboxFilters() {
  const [params, setParams] = useSearchParams();
  const { users, teams } = useAssignees();
  const [text, setText] = useState(params.get('q') ?? '');

  const set = (key: string, value: string) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (value) next.set(key, value);
        else next.delete(key);
        return next;
      },
      { replace: true },
    );

  // The search waits for a pause in typing.
  useEffect(() => {
    const timer = setTimeout(() => {
      if ((params.get('q') ?? '') !== text.trim()) set('q', text.trim());
    }, 300);
    return () => clearTimeout(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [text]);

  const select = (key: string, label: string, options: [string, string][]) => (
    <label className="field">
      <span className="field-label">{label}</span>
      <select value={params.get(key) ?? ''} onChange={(event) => set(key, event.target.value)}>
        {options.map(([value, name]) => (
          <option key={value} value={value}>
            {name}
          </option>
        ))}
      </select>
    </label>
  );

  return (
    <div className="inbox-filters" role="search">
      <label className="field">
        <span className="field-label">Search</span>
        <input
          type="search"
          placeholder="Name, phone or email"
          value={text}
          onChange={(event) => setText(event.target.value)}
        />
      </label>
      <div className="inbox-filter-row">
        {select('status', 'Status', [
          ['', 'Open'],
          ['closed', 'Closed'],
        ])}
        {select('channel', 'Channel', [['', 'All'], ...CHANNELS.map((c): [string, string] => [c, c])])}
        {select('team', 'Team', [['', 'Any'], ...teams.map((team): [string, string] => [team.id, team.name])])}
        {select('assignee', 'Assignee', [
          ['', 'Anyone'],
          ['me', 'Me'],
          ['unassigned', 'Unassigned'],
          ...users.map((user): [string, string] => [user.id, user.name]),
        ])}
        {select('control', 'Control', [
          ['', 'All'],
          ['manual', 'Manual'],
          ['ai', 'AI'],
        ])}
      </div>
    </div>
  );
}

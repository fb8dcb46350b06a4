// The Reports page: one report at a time (its name in the path), for a period and filters kept in the
// address's query, so a report can be shared and survives a reload.
import { useState, type FormEvent } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { useLoad } from '../../api/use-load';
import { useAssignees } from '../../inbox/use-assignees';
import { useDocumentTitle } from '../../shell/document-title';
import { ErrorNote } from '../../shell/error-note';
import { Loading } from '../../shell/loading';
import { NotFoundPage } from '../status-pages';
import page from '../page.module.css';
import { channelName, CHANNELS } from './format';
import {
  csvHref,
  readReport,
  reportParams,
  REPORT_TITLES,
  REPORTS,
  type Report,
  type ReportName,
  type ReportQuery,
} from './report-api';
import { PRESETS, readSelection, writeSelection } from './report-query';
import { isEmpty, ReportView } from './report-views';
import styles from './reports.module.css';

const isReport = (name: string): name is ReportName => (REPORTS as readonly string[]).includes(name);

export function ReportsPage() {
  const { report: name = 'volume' } = useParams();
  if (!isReport(name)) return <NotFoundPage />;
  return <ReportPage name={name} />;
}

function ReportPage({ name }: { name: ReportName }) {
  useDocumentTitle(`Reports: ${REPORT_TITLES[name]}`);
  const [params, setParams] = useSearchParams();
  const { period, query } = readSelection(params);
  const key = `${name}?${reportParams(query).toString()}`;
  const { data, error, status, loading } = useLoad(async () => {
    const answer = await readReport(name, query);
    return { ...answer, data: answer.data as Report | undefined };
  }, key);
  const search = params.toString();

  return (
    <div className={`${page.page} ${styles.page}`}>
      <h1>Reports</h1>
      <nav aria-label="Reports" className={styles.tabs}>
        {REPORTS.map((report) => (
          <Link
            key={report}
            to={{ pathname: `/reports/${report}`, search }}
            className={styles.tab}
            aria-current={report === name ? 'page' : undefined}
          >
            {REPORT_TITLES[report]}
          </Link>
        ))}
      </nav>
      <Filters key={search} period={period} query={query} shown={data} onApply={setParams} />
      {status === 403 ? (
        <p className={page.notice} role="alert">
          You lack access to reports: only admins and owners can read them.
        </p>
      ) : (
        <ErrorNote message={error} />
      )}
      {loading && <Loading />}
      {data && (
        <div className={styles.report}>
          <p className={styles.period} role="status">
            {REPORT_TITLES[name]} from {data.since} to {data.until} ({data.time_zone})
          </p>
          {isEmpty(data) ? (
            <p className={page.notice}>Nothing to report in this period. Choose a longer period or fewer filters.</p>
          ) : (
            <ReportView
              name={name}
              report={data}
              // The days shown, as the service resolved a preset: the file holds these rows even after midnight.
              csv={(table) =>
                csvHref(name, { ...query, last_days: undefined, since: data.since, until: data.until }, table)
              }
            />
          )}
        </div>
      )}
    </div>
  );
}

/** The period and the filters, applied together to the address. */
function Filters({
  period: shownPeriod,
  query,
  shown,
  onApply,
}: {
  period: string;
  query: ReportQuery;
  /** The days of the report shown, which custom dates start from. */
  shown?: { since: string; until: string };
  onApply: (params: URLSearchParams) => void;
}) {
  const { users, teams, agents } = useAssignees();
  const [period, setPeriod] = useState(shownPeriod);
  const [since, setSince] = useState(query.since ?? '');
  const [until, setUntil] = useState(query.until ?? '');
  const [channels, setChannels] = useState(query.channel ? query.channel.split(',') : []);
  const [teamId, setTeamId] = useState(query.team_id ?? '');
  const [userId, setUserId] = useState(query.user_id ?? '');
  const [agentId, setAgentId] = useState(query.agent_id ?? '');

  const apply = (event: FormEvent) => {
    event.preventDefault();
    onApply(
      writeSelection(period, {
        since,
        until,
        channel: channels.join(','),
        team_id: teamId,
        user_id: userId,
        agent_id: agentId,
      }),
    );
  };
  const choosePeriod = (chosen: string) => {
    setPeriod(chosen);
    // A preset's days are the service's (the business's today): custom dates start from those shown.
    if (chosen === 'custom' && !since && !until && shown) {
      setSince(shown.since);
      setUntil(shown.until);
    }
  };
  const toggle = (channel: string, on: boolean) =>
    setChannels(
      on
        ? CHANNELS.filter((item) => item === channel || channels.includes(item))
        : channels.filter((item) => item !== channel),
    );

  return (
    <form className={styles.filters} onSubmit={apply} aria-label="Filters">
      <label className="field">
        <span className="field-label">Period</span>
        <select value={period} onChange={(event) => choosePeriod(event.target.value)}>
          {PRESETS.map((days) => (
            <option key={days} value={days}>
              Last {days} days
            </option>
          ))}
          <option value="custom">Custom dates</option>
        </select>
      </label>
      {period === 'custom' && (
        <>
          <label className="field">
            <span className="field-label">From</span>
            <input type="date" required value={since} max={until} onChange={(event) => setSince(event.target.value)} />
          </label>
          <label className="field">
            <span className="field-label">To</span>
            <input type="date" required value={until} min={since} onChange={(event) => setUntil(event.target.value)} />
          </label>
        </>
      )}
      <details className={styles.channels}>
        <summary>{channels.length === 0 ? 'All channels' : channels.map(channelName).join(', ')}</summary>
        <fieldset>
          <legend>Channels (none checked: all)</legend>
          {CHANNELS.map((channel) => (
            <label key={channel} className={styles.check}>
              <input
                type="checkbox"
                checked={channels.includes(channel)}
                onChange={(event) => toggle(channel, event.target.checked)}
              />
              {channelName(channel)}
            </label>
          ))}
        </fieldset>
      </details>
      <Choice label="Team" value={teamId} onChange={setTeamId} options={teams} every="All teams" />
      <Choice label="User" value={userId} onChange={setUserId} options={users} every="All users" />
      <Choice label="AI agent" value={agentId} onChange={setAgentId} options={agents} every="All AI agents" />
      <button type="submit" className="button button-primary">
        Apply
      </button>
    </form>
  );
}

function Choice({
  label,
  value,
  onChange,
  options,
  every,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  options: { id: string; name: string }[];
  every: string;
}) {
  return (
    <label className="field">
      <span className="field-label">{label}</span>
      <select value={value} onChange={(event) => onChange(event.target.value)}>
        <option value="">{every}</option>
        {options.map((option) => (
          <option key={option.id} value={option.id}>
            {option.name}
          </option>
        ))}
      </select>
    </label>
  );
}

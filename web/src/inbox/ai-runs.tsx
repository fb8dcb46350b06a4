// The AI agent's runs of a conversation (GET /dashboard/api/conversations/:id/ai-runs), newest first,
// in a dialog opened from the conversation's header: how each ended, what it answered, its model and
// tool calls, and its reply.
import { useId, useState } from 'react';
import { api, errorMessage } from '../api/client';
import type { paths } from '../api/schema';
import { useLoad } from '../api/use-load';
import { useLiveReload } from '../live/live';
import { Dialog } from '../shell/dialog';
import { ErrorNote } from '../shell/error-note';
import { time, type ThreadItem } from './inbox-types';
import styles from './inbox.module.css';

type RunsPage =
  paths['/dashboard/api/conversations/{id}/ai-runs']['get']['responses'][200]['content']['application/json'];
type Run = RunsPage['runs'][number];

/** Runs read at a time: each is long to read, so a few, with older ones on asking. */
const PAGE = 10;

const STATUS: Record<Run['status'], string> = {
  running: 'Running',
  replied: 'Replied',
  skipped: 'Skipped',
  superseded: 'Superseded by a newer message',
  handed_over: 'Handed to a person',
  resolved: 'Resolved the conversation',
  transferred: 'Transferred the conversation',
  analyzed: 'Analysed',
  failed: 'Failed',
};

/** What a run was for: an answer, a follow-up after a silence, or the conversation's sentiment. */
const KIND: Record<Run['kind'], string> = { reply: 'Reply', follow_up: 'Follow-up', sentiment: 'Sentiment' };

const BOT_STATUS: Record<NonNullable<Run['bot_status']>, string> = {
  bot_start: "bot_start: the agent's first reply in the conversation",
  bot_end: 'bot_end: the hand-over message, after which people answer',
};

/** The conversation's runs with `fresh` over `shown` (a newer copy of a run replaces it), newest first. */
function merge(shown: Run[], fresh: Run[]): Run[] {
  const byId = new Map(shown.map((run) => [run.id, run]));
  for (const run of fresh) byId.set(run.id, run);
  // Run ids are UUIDv7: their order is the order the runs started.
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : -1));
}

/** A tool call's part (arguments, result) as text; the record's shape is the run's, not the contract's. */
const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/**
 * Why the conversation's AI agent does not answer now, or nothing when it does: no agent, one that is
 * inactive (its `inactive_reason`), or a person in control.
 */
export function agentSilence(
  agent: { name: string; inactive_reason: string | null } | null,
  manualControl: boolean,
): string | undefined {
  if (!agent) return 'No AI agent is assigned: people answer this conversation.';
  if (agent.inactive_reason) return `${agent.name} does not answer: ${agent.inactive_reason}.`;
  if (manualControl) return `A person has taken over: ${agent.name} does not answer until handed back.`;
  return undefined;
}

/** The "AI runs" button of a conversation and the dialog it opens. */
export function AiRunsDialog({
  conversationId,
  silence,
  items,
}: {
  conversationId: string;
  /** Why the agent does not answer now (agentSilence), if it does not. */
  silence?: string;
  /** The thread as loaded, for the texts of the messages a run answered. */
  items: ThreadItem[];
}) {
  return (
    <Dialog label="AI runs" title="AI agent runs">
      {(close) => (
        <>
          {silence && <p className={styles.silence}>{silence}</p>}
          <RunList conversationId={conversationId} items={items} />
          <div>
            <button type="button" className="button" onClick={close}>
              Close
            </button>
          </div>
        </>
      )}
    </Dialog>
  );
}

function RunList({ conversationId, items }: { conversationId: string; items: ThreadItem[] }) {
  const first = useLoad(
    () =>
      api.GET('/dashboard/api/conversations/{id}/ai-runs', {
        params: { path: { id: conversationId }, query: { limit: PAGE } },
      }),
    conversationId,
  );
  // Runs shown besides the newest page: older pages, and what the newest page showed before a reload.
  const [kept, setKept] = useState<Run[]>([]);
  const [next, setNext] = useState<string | null>();
  const [olderError, setOlderError] = useState<string>();
  const [pending, setPending] = useState(false);

  // A run's reply and the messages it answers arrive as the conversation's events: read the newest page
  // again, keeping the runs it showed so that none drops out between it and the older pages.
  useLiveReload(
    () => {
      const shown = first.data?.runs ?? [];
      setKept((current) => merge(current, shown));
      void first.reload();
    },
    (signal) => signal.kind === 'reset' || signal.event.conversation_id === conversationId,
  );

  const runs = merge(kept, first.data?.runs ?? []);
  const before = next === undefined ? first.data?.next_before : next;

  const loadOlder = async () => {
    if (!before) return;
    setPending(true);
    setOlderError(undefined);
    const { data, error, response } = await api
      .GET('/dashboard/api/conversations/{id}/ai-runs', {
        params: { path: { id: conversationId }, query: { limit: PAGE, before } },
      })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }));
    setPending(false);
    if (!data) return setOlderError(errorMessage(error, response));
    setKept((current) => merge(current, data.runs));
    setNext(data.next_before);
  };

  const texts = new Map(
    items.flatMap((item) => (item.kind === 'message' ? [[item.id, item.text || `[${item.type}]`] as const] : [])),
  );

  if (first.error) return <ErrorNote message={first.error} />;
  if (!first.data) return <p className={styles.note}>Loading…</p>;
  if (runs.length === 0) return <p className={styles.note}>The AI agent has not run in this conversation.</p>;
  return (
    <>
      <ol className={styles.runs} aria-label="Runs, newest first">
        {runs.map((run) => (
          <RunItem key={run.id} run={run} texts={texts} />
        ))}
      </ol>
      <ErrorNote message={olderError} />
      {before && (
        <div>
          <button
            type="button"
            className="button"
            disabled={pending}
            aria-busy={pending}
            onClick={() => void loadOlder()}
          >
            Load older runs
          </button>
        </div>
      )}
    </>
  );
}

function RunItem({ run, texts }: { run: Run; texts: Map<string, string> }) {
  const id = useId();
  return (
    <li className={styles.run}>
      <article aria-labelledby={id}>
        <h3 id={id}>
          {KIND[run.kind]}: {STATUS[run.status]} · <time dateTime={run.created_at}>{time(run.created_at)}</time>
        </h3>
        <dl className={styles.facts}>
          <dt>Outcome</dt>
          <dd>{run.outcome ?? '—'}</dd>
          <dt>Started</dt>
          <dd>
            <time dateTime={run.created_at}>{time(run.created_at)}</time>
          </dd>
          <dt>Ended</dt>
          <dd>{run.finished_at ? <time dateTime={run.finished_at}>{time(run.finished_at)}</time> : 'Not yet'}</dd>
          <dt>Attempts</dt>
          <dd>{run.attempts}</dd>
          {run.error && (
            <>
              <dt>Error</dt>
              <dd className={styles.failure}>{run.error}</dd>
            </>
          )}
        </dl>

        {run.kind === 'reply' && (
          <>
            <h4>Messages answered</h4>
            <ul className={styles.runList}>
              {run.input_message_ids.map((messageId) => (
                <li key={messageId} className={styles.text}>
                  {texts.get(messageId) ?? 'An earlier message, not loaded in the thread.'}
                </li>
              ))}
            </ul>
          </>
        )}

        <h4>Model calls</h4>
        {run.model_calls.length === 0 ? (
          <p className={styles.note}>None</p>
        ) : (
          <ul className={styles.runList}>
            {run.model_calls.map((call, index) => (
              <li key={index}>
                {call.model} · {call.tokens_in ?? '?'} tokens in, {call.tokens_out ?? '?'} out · {call.latency_ms} ms
                {call.error && <span className={styles.failure}> · {call.error}</span>}
              </li>
            ))}
          </ul>
        )}

        <h4>Tool calls</h4>
        {run.tool_calls.length === 0 ? (
          <p className={styles.note}>None</p>
        ) : (
          <ul className={styles.runList}>
            {run.tool_calls.map((call, index) => (
              <li key={index}>
                <strong>{typeof call.name === 'string' ? call.name : 'tool'}</strong>
                {call.arguments !== undefined && (
                  <>
                    <span className={styles.note}>Arguments</span>
                    <pre className={styles.json}>{asText(call.arguments)}</pre>
                  </>
                )}
                {call.result !== undefined && (
                  <>
                    <span className={styles.note}>Result</span>
                    <pre className={styles.json}>{asText(call.result)}</pre>
                  </>
                )}
                {call.error !== undefined && <p className={styles.failure}>{asText(call.error)}</p>}
              </li>
            ))}
          </ul>
        )}

        {run.kind !== 'sentiment' && (
          <>
            <h4>{run.kind === 'follow_up' ? 'Follow-up' : 'Reply'}</h4>
            <p className={styles.text}>{run.reply_text ?? 'No reply was sent.'}</p>
            {run.bot_status && <p className={styles.note}>{BOT_STATUS[run.bot_status]}</p>}
          </>
        )}
      </article>
    </li>
  );
}

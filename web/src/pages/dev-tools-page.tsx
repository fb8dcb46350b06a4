// Dev Tools (admins and owners): the business's API keys and its event triggers (message_created
// webhooks) with their delivery log. Secrets the service shows once (a new key, a trigger's signing
// secret) are shown here once too, with a button to copy them.
import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../api/client';
import type { paths } from '../api/schema';
import { useLoad } from '../api/use-load';
import { useDocumentTitle } from '../shell/document-title';
import { ErrorNote } from '../shell/error-note';
import page from './page.module.css';
import styles from './dev-tools-page.module.css';

type ApiKey =
  paths['/dashboard/api/api-keys']['get']['responses'][200]['content']['application/json']['api_keys'][number];
type Webhook =
  paths['/dashboard/api/webhooks']['get']['responses'][200]['content']['application/json']['webhooks'][number];
type Attempt =
  paths['/dashboard/api/webhooks/{id}/deliveries']['get']['responses'][200]['content']['application/json']['deliveries'][number];

/** A list's read error as Dev Tools words it. */
const unread = (what: string, error: string | undefined) => error && `${what} could not be read: ${error}.`;

const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** A secret shown once: read-only, selectable, with a copy button. */
function OnceShown({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className={styles.once} role="status">
      <label className="field">
        <span className="field-label">{label}</span>
        <input readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
      </label>
      <p className={styles.hint}>Copy it now: it is not shown again.</p>
      <div className={styles.actions}>
        <button
          type="button"
          className="button button-primary"
          onClick={() => void navigator.clipboard?.writeText(value).then(() => setCopied(true))}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" className="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

function ApiKeys() {
  const listed = useLoad(() => api.GET('/dashboard/api/api-keys'));
  const keys: ApiKey[] | undefined = listed.data?.api_keys;
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; key: string }>();
  const [confirming, setConfirming] = useState<string>();
  const [error, setError] = useState<string>();

  async function create(event: FormEvent) {
    event.preventDefault();
    setError(undefined);
    const {
      data,
      error: failed,
      response,
    } = await api.POST('/dashboard/api/api-keys', {
      body: { name: name.trim() || undefined },
    });
    if (!data) return setError(`The key was not created: ${errorMessage(failed, response)}.`);
    setCreated({ name: data.api_key.name, key: data.key });
    setName('');
    await listed.reload();
  }

  async function revoke(id: string) {
    setConfirming(undefined);
    const { error: failed, response } = await api.DELETE('/dashboard/api/api-keys/{id}', { params: { path: { id } } });
    if (!response.ok) setError(`The key was not revoked: ${errorMessage(failed, response)}.`);
    await listed.reload();
  }

  return (
    <section className={styles.section} aria-labelledby="api-keys-title">
      <h2 id="api-keys-title">API keys</h2>
      <p className={styles.hint}>
        Keys let your systems call the public API (<code>X-API-Key</code> header). A key is shown once, when created.
      </p>
      <form className={styles.inline} onSubmit={(e) => void create(e)}>
        <label className="field">
          <span className="field-label">Key name</span>
          <input value={name} maxLength={100} onChange={(e) => setName(e.target.value)} placeholder="Zapier" />
        </label>
        <button type="submit" className="button button-primary">
          Create API key
        </button>
      </form>
      {created && (
        <OnceShown label={`New API key: ${created.name}`} value={created.key} onDone={() => setCreated(undefined)} />
      )}
      <ErrorNote message={error ?? unread('The keys', listed.error)} />
      {keys === undefined ? (
        <p className="loading">Loading keys…</p>
      ) : keys.length === 0 ? (
        <p className={styles.hint}>No keys yet.</p>
      ) : (
        <ul className={styles.list} aria-label="API keys">
          {keys.map((key) => (
            <li key={key.id} className={styles.row}>
              <div>
                <strong>{key.name}</strong> <code>{key.prefix}…</code>
                <div className={styles.meta}>
                  Created {when(key.created_at)} · Last used {when(key.last_used_at)}
                  {key.revoked_at ? ` · Revoked ${when(key.revoked_at)}` : ''}
                </div>
              </div>
              {!key.revoked_at &&
                (confirming === key.id ? (
                  <div className={styles.actions} role="group" aria-label={`Revoke ${key.name}?`}>
                    <span>Revoke? Requests with it stop at once.</span>
                    <button type="button" className={`button ${styles.danger}`} onClick={() => void revoke(key.id)}>
                      Confirm revoke
                    </button>
                    <button type="button" className="button" onClick={() => setConfirming(undefined)}>
                      Cancel
                    </button>
                  </div>
                ) : (
                  <button
                    type="button"
                    className="button"
                    aria-label={`Revoke ${key.name}`}
                    onClick={() => setConfirming(key.id)}
                  >
                    Revoke
                  </button>
                ))}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

type HeaderRow = { name: string; value: string };

/** The trigger's form: creation, or an edit of one (its header values come back masked, and kept by their mask). */
function TriggerForm({
  initial,
  submitLabel,
  onSubmit,
  onCancel,
}: {
  initial?: Webhook;
  submitLabel: string;
  onSubmit: (body: {
    url: string;
    method: 'POST' | 'PUT';
    headers: Record<string, string>;
  }) => Promise<string | undefined>;
  onCancel?: () => void;
}) {
  const [url, setUrl] = useState(initial?.url ?? '');
  const [method, setMethod] = useState<'POST' | 'PUT'>(initial?.method === 'PUT' ? 'PUT' : 'POST');
  const [headers, setHeaders] = useState<HeaderRow[]>(
    Object.entries(initial?.headers ?? {}).map(([name, value]) => ({ name, value })),
  );
  const [error, setError] = useState<string>();
  const prefix = initial ? `edit-${initial.id}` : 'new';

  async function submit(event: FormEvent) {
    event.preventDefault();
    const body = {
      url: url.trim(),
      method,
      headers: Object.fromEntries(headers.filter((h) => h.name.trim()).map((h) => [h.name.trim(), h.value])),
    };
    setError(await onSubmit(body));
  }

  return (
    <form className={styles.form} onSubmit={(e) => void submit(e)}>
      <label className="field">
        <span className="field-label">Endpoint URL</span>
        <input type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://" />
      </label>
      <label className="field">
        <span className="field-label">Method</span>
        <select value={method} onChange={(e) => setMethod(e.target.value as 'POST' | 'PUT')}>
          <option>POST</option>
          <option>PUT</option>
        </select>
      </label>
      <fieldset className={styles.headers}>
        <legend>Custom headers</legend>
        {headers.map((header, i) => (
          <div key={i} className={styles.headerRow}>
            <label className="field">
              <span className="field-label" id={`${prefix}-h${i}-name`}>
                Header name {i + 1}
              </span>
              <input
                value={header.name}
                onChange={(e) => setHeaders(headers.map((h, j) => (j === i ? { ...h, name: e.target.value } : h)))}
              />
            </label>
            <label className="field">
              <span className="field-label">Header value {i + 1}</span>
              <input
                value={header.value}
                onChange={(e) => setHeaders(headers.map((h, j) => (j === i ? { ...h, value: e.target.value } : h)))}
              />
            </label>
            <button
              type="button"
              className="button"
              aria-label={`Remove header ${i + 1}`}
              onClick={() => setHeaders(headers.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </div>
        ))}
        <button type="button" className="button" onClick={() => setHeaders([...headers, { name: '', value: '' }])}>
          Add header
        </button>
      </fieldset>
      <ErrorNote message={error} />
      <div className={styles.actions}>
        <button type="submit" className="button button-primary">
          {submitLabel}
        </button>
        {onCancel && (
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

function DeliveryLog({ webhook }: { webhook: Webhook }) {
  const first = useLoad(
    () =>
      api.GET('/dashboard/api/webhooks/{id}/deliveries', {
        params: { path: { id: webhook.id }, query: { limit: 50 } },
      }),
    webhook.id,
  );
  // Older pages, read on request; a reload starts from the newest page again.
  const [older, setOlder] = useState<{ attempts: Attempt[]; cursor: string | null }>();
  const [error, setError] = useState<string>();
  const attempts = first.data && [...first.data.deliveries, ...(older?.attempts ?? [])];
  const cursor = older ? older.cursor : (first.data?.next_cursor ?? null);

  function refresh() {
    setOlder(undefined);
    void first.reload();
  }

  async function readOlder(after: string) {
    const {
      data,
      error: failed,
      response,
    } = await api.GET('/dashboard/api/webhooks/{id}/deliveries', {
      params: { path: { id: webhook.id }, query: { limit: 50, cursor: after } },
    });
    if (!data) return setError(`Older attempts could not be read: ${errorMessage(failed, response)}.`);
    setOlder({ attempts: [...(older?.attempts ?? []), ...data.deliveries], cursor: data.next_cursor });
  }

  async function sendAgain(deliveryId: string) {
    setError(undefined);
    const { error: failed, response } = await api.POST(
      '/dashboard/api/webhooks/{id}/deliveries/{deliveryId}/redeliver',
      {
        params: { path: { id: webhook.id, deliveryId } },
      },
    );
    if (!response.ok) setError(`Not sent again: ${errorMessage(failed, response)}.`);
    // The new attempt is logged once the worker made it.
    setTimeout(refresh, 1000);
  }

  return (
    <div className={styles.log}>
      <div className={styles.actions}>
        <h4 className={styles.logTitle}>Delivery log</h4>
        <button type="button" className="button" onClick={refresh}>
          Refresh log
        </button>
      </div>
      <ErrorNote message={error ?? unread('The log', first.error)} />
      {attempts === undefined ? (
        <p className="loading">Loading…</p>
      ) : attempts.length === 0 ? (
        <p className={styles.hint}>No attempts yet: one is made for each new message.</p>
      ) : (
        <div className={styles.tableWrap}>
          <table className={styles.table}>
            <caption className="visually-hidden">Attempts to {webhook.url}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Attempt</th>
                <th scope="col">HTTP status</th>
                <th scope="col">Duration</th>
                <th scope="col">Response</th>
                <th scope="col">Next retry</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {attempts.map((a) => (
                <tr key={`${a.id}-${a.attempt}-${a.created_at}`}>
                  <td>{when(a.created_at)}</td>
                  <td>{a.attempt}</td>
                  <td className={a.ok ? styles.ok : styles.failed}>{a.status_code ?? a.error ?? 'no answer'}</td>
                  <td>{a.duration_ms} ms</td>
                  <td className={styles.excerpt}>{a.response_body ?? a.error ?? ''}</td>
                  <td>{when(a.next_attempt_at)}</td>
                  <td>
                    <button
                      type="button"
                      className="button"
                      aria-label={`Send again delivery ${a.id} (attempt ${a.attempt})`}
                      onClick={() => void sendAgain(a.id)}
                    >
                      Send again
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && (
        <button type="button" className="button" onClick={() => void readOlder(cursor)}>
          Older attempts
        </button>
      )}
    </div>
  );
}

function Trigger({ webhook, onChanged }: { webhook: Webhook; onChanged: (secret?: string) => Promise<void> }) {
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [showLog, setShowLog] = useState(false);
  const [error, setError] = useState<string>();
  const path = { params: { path: { id: webhook.id } } };

  async function patch(body: {
    url?: string;
    method?: 'POST' | 'PUT';
    headers?: Record<string, string>;
    enabled?: boolean;
  }) {
    const { data, error: failed, response } = await api.PATCH('/dashboard/api/webhooks/{id}', { ...path, body });
    if (!data) return `Not saved: ${errorMessage(failed, response)}.`;
    await onChanged();
    return undefined;
  }

  async function rotate() {
    const { data, error: failed, response } = await api.POST('/dashboard/api/webhooks/{id}/rotate-secret', path);
    if (!data) return setError(`Not rotated: ${errorMessage(failed, response)}.`);
    await onChanged(data.secret);
  }

  async function remove() {
    const { error: failed, response } = await api.DELETE('/dashboard/api/webhooks/{id}', path);
    if (!response.ok) return setError(`Not deleted: ${errorMessage(failed, response)}.`);
    await onChanged();
  }

  return (
    <li className={styles.trigger} aria-label={`Trigger ${webhook.url}`}>
      <div className={styles.row}>
        <div>
          <strong className={styles.url}>
            {webhook.method} {webhook.url}
          </strong>
          <div className={styles.meta}>
            message_created ·{' '}
            {webhook.enabled ? 'Enabled' : `Disabled${webhook.disabled_reason ? ` (${webhook.disabled_reason})` : ''}`}
            {' · '}Last success {when(webhook.last_success_at)}
          </div>
        </div>
        <div className={styles.actions}>
          <button
            type="button"
            className="button"
            onClick={() => void patch({ enabled: !webhook.enabled }).then(setError)}
          >
            {webhook.enabled ? 'Disable' : 'Enable'}
          </button>
          <button type="button" className="button" aria-expanded={editing} onClick={() => setEditing(!editing)}>
            Edit
          </button>
          <button type="button" className="button" onClick={() => void rotate()}>
            Rotate secret
          </button>
          <button type="button" className="button" aria-expanded={showLog} onClick={() => setShowLog(!showLog)}>
            Delivery log
          </button>
          {deleting ? (
            <span role="group" aria-label="Delete this trigger?" className={styles.actions}>
              <button type="button" className={`button ${styles.danger}`} onClick={() => void remove()}>
                Confirm delete
              </button>
              <button type="button" className="button" onClick={() => setDeleting(false)}>
                Cancel
              </button>
            </span>
          ) : (
            <button type="button" className="button" onClick={() => setDeleting(true)}>
              Delete
            </button>
          )}
        </div>
      </div>
      <ErrorNote message={error} />
      {editing && (
        <TriggerForm
          initial={webhook}
          submitLabel="Save trigger"
          onCancel={() => setEditing(false)}
          onSubmit={async (body) => {
            const failed = await patch(body);
            if (!failed) setEditing(false);
            return failed;
          }}
        />
      )}
      {showLog && <DeliveryLog webhook={webhook} />}
    </li>
  );
}

function EventTriggers() {
  const listed = useLoad(() => api.GET('/dashboard/api/webhooks'));
  const webhooks: Webhook[] | undefined = listed.data?.webhooks;
  const [secret, setSecret] = useState<string>();
  // A new form after each creation, empty again.
  const [formKey, setFormKey] = useState(0);

  return (
    <section className={styles.section} aria-labelledby="triggers-title">
      <h2 id="triggers-title">Event triggers</h2>
      <p className={styles.hint}>
        Each new message is sent to these endpoints (<code>message_created</code>), signed with the trigger's secret.
      </p>
      <TriggerForm
        key={formKey}
        submitLabel="Create trigger"
        onSubmit={async (body) => {
          const {
            data,
            error: failed,
            response,
          } = await api.POST('/dashboard/api/webhooks', {
            body: { event: 'message_created', ...body },
          });
          if (!data) return `The trigger was not created: ${errorMessage(failed, response)}.`;
          setSecret(data.secret);
          setFormKey((k) => k + 1);
          await listed.reload();
          return undefined;
        }}
      />
      {secret && <OnceShown label="Signing secret" value={secret} onDone={() => setSecret(undefined)} />}
      <ErrorNote message={unread('The triggers', listed.error)} />
      {webhooks === undefined ? (
        <p className="loading">Loading triggers…</p>
      ) : webhooks.length === 0 ? (
        <p className={styles.hint}>No triggers yet.</p>
      ) : (
        <ul className={styles.list} aria-label="Event triggers">
          {webhooks.map((webhook) => (
            <Trigger
              key={webhook.id}
              webhook={webhook}
              onChanged={async (rotated) => {
                if (rotated) setSecret(rotated);
                await listed.reload();
              }}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

export function DevToolsPage() {
  useDocumentTitle('Dev Tools');
  return (
    <div className={page.page}>
      <h1>Dev Tools</h1>
      <p className={page.lead}>
        Connect your systems: API keys for the public API and event triggers for new messages. The{' '}
        <a href="/docs">API reference</a> describes both.
      </p>
      <ApiKeys />
      <EventTriggers />
    </div>
  );
}

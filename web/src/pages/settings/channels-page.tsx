import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client';
import type { paths } from '../../api/schema';
import { useDocumentTitle } from '../../shell/document-title';
import page from '../page.module.css';
import { CopyField, ErrorNote, Field, fieldLabel, useLoaded } from './settings-kit';
import styles from './settings.module.css';

type Kind =
  paths['/dashboard/api/channel-kinds']['get']['responses'][200]['content']['application/json']['kinds'][number];
type Connected = { webhook: { url: string | null; verify_token: string | null }; name: string };

/** The business's channels: connected from the form of their provider kind, re-paced in place. */
export function ChannelsPage() {
  useDocumentTitle('Channels');
  const kinds = useLoaded(() => api.GET('/dashboard/api/channel-kinds'));
  const channels = useLoaded(() => api.GET('/dashboard/api/channels'));
  const [connected, setConnected] = useState<Connected>();

  return (
    <div className={page.page}>
      <h1>Channels</h1>
      <p className={page.lead}>The accounts your business is reached on.</p>

      <section className={styles.section} aria-labelledby="channels-list">
        <h2 id="channels-list">Connected channels</h2>
        <ErrorNote message={channels.error} />
        {channels.data && channels.data.channels.length === 0 && <p className={styles.empty}>No channel yet.</p>}
        {channels.data && channels.data.channels.length > 0 && (
          <table className={styles.table}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Number</th>
                <th scope="col">Webhook URL</th>
                <th scope="col">Secrets</th>
                <th scope="col">Pace (messages per second)</th>
              </tr>
            </thead>
            <tbody>
              {channels.data.channels.map((channel) => (
                <tr key={channel.id}>
                  <td>{channel.name}</td>
                  <td>{channel.identifier}</td>
                  <td>{channel.webhook_url ?? '—'}</td>
                  <td>
                    {Object.entries(channel.secrets)
                      .map(([name, mask]) => `${fieldLabel(name)} ${mask}`)
                      .join(', ') || '—'}
                  </td>
                  <td>
                    <PaceForm
                      id={channel.id}
                      name={channel.name}
                      pace={channel.pace_per_second}
                      onSaved={channels.reload}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      {connected && (
        <section className={styles.section} aria-labelledby="connected-heading">
          <div className={styles.result} role="status">
            <h2 id="connected-heading">{connected.name} is connected</h2>
            <p className={styles.hint}>
              Paste these into your Meta app’s webhook settings. The verify token is shown only now.
            </p>
            {connected.webhook.url && <CopyField label="Webhook URL" value={connected.webhook.url} />}
            {connected.webhook.verify_token && (
              <CopyField label="Verify token" value={connected.webhook.verify_token} />
            )}
          </div>
        </section>
      )}

      <section className={styles.section} aria-labelledby="connect-heading">
        <h2 id="connect-heading">Connect a channel</h2>
        <ErrorNote message={kinds.error} />
        {kinds.data?.kinds.map((kind) => (
          <ConnectForm
            key={kind.kind}
            kind={kind}
            onConnected={(result) => {
              setConnected(result);
              void channels.reload();
            }}
          />
        ))}
      </section>
    </div>
  );
}

function PaceForm({
  id,
  name,
  pace,
  onSaved,
}: {
  id: string;
  name: string;
  pace: number;
  onSaved: () => Promise<void>;
}) {
  const [value, setValue] = useState(String(pace));
  const [error, setError] = useState<string>();
  const [saved, setSaved] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setSaved(false);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/dashboard/api/channels/{id}', {
      params: { path: { id } },
      body: { pace_per_second: Number(value) },
    });
    if (!data) return setError(errorMessage(failure, response));
    setSaved(true);
    await onSaved();
  };
  return (
    <form className={styles.inline} onSubmit={(event) => void submit(event)}>
      <input
        type="number"
        min={1}
        max={1000}
        required
        aria-label={`Pace of ${name}`}
        value={value}
        onChange={(event) => setValue(event.target.value)}
      />
      <button type="submit" className="button">
        Save
      </button>
      {saved && <span role="status">Saved</span>}
      <ErrorNote message={error} />
    </form>
  );
}

function ConnectForm({ kind, onConnected }: { kind: Kind; onConnected: (result: Connected) => void }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);
  const set = (name: string, value: string) => setValues((current) => ({ ...current, [name]: value }));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setError(undefined);
    const provider: Record<string, string> = { kind: kind.kind };
    for (const field of kind.fields) if (values[field.name]) provider[field.name] = values[field.name];
    const body = {
      type: kind.channel_types[0],
      identifier: values.identifier ?? '',
      ...(values.name ? { name: values.name } : {}),
      provider,
    };
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/dashboard/api/channels', {
      // The provider object's fields are the kind's, read from the service at run time.
      body: body as never,
    });
    setPending(false);
    if (!data) return setError(errorMessage(failure, response));
    setValues({});
    onConnected({ webhook: data.webhook, name: data.channel.name });
  };

  return (
    <form className={`${styles.form} ${styles.card}`} onSubmit={(event) => void submit(event)}>
      <Field label="Business number" hint="The number with its country code, e.g. +15551234567.">
        {(props) => (
          <input
            {...props}
            required
            inputMode="tel"
            value={values.identifier ?? ''}
            onChange={(event) => set('identifier', event.target.value)}
          />
        )}
      </Field>
      <Field label="Name (optional)">
        {(props) => (
          <input {...props} value={values.name ?? ''} onChange={(event) => set('name', event.target.value)} />
        )}
      </Field>
      {kind.fields.map((field) => (
        <Field
          key={field.name}
          label={`${fieldLabel(field.name)}${field.required ? '' : ' (optional)'}`}
          hint={field.description}
        >
          {(props) => (
            <input
              {...props}
              name={field.name}
              type={field.secret ? 'password' : field.type === 'url' ? 'url' : 'text'}
              autoComplete="off"
              required={field.required}
              pattern={field.pattern}
              maxLength={field.max_length}
              value={values[field.name] ?? ''}
              onChange={(event) => set(field.name, event.target.value)}
            />
          )}
        </Field>
      ))}
      <ErrorNote message={error} />
      <div>
        <button type="submit" className="button button-primary" disabled={pending} aria-busy={pending}>
          Connect channel
        </button>
      </div>
    </form>
  );
}

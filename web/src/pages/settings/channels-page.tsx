import { useId, useState, type FormEvent, type ReactNode } from 'react';
import { api, errorMessage } from '../../api/client';
import type { paths } from '../../api/schema';
import { useLoad } from '../../api/use-load';
import { ConfirmDialog } from '../../shell/dialog';
import { ErrorNote } from '../../shell/error-note';
import { ChannelLink } from './channel-link';
import { CopyField, Field, fieldLabel, SettingsPage, SettingsSection, SettingsTable } from './settings-kit';
import styles from './settings.module.css';

type Channel =
  paths['/dashboard/api/channels']['get']['responses'][200]['content']['application/json']['channels'][number];
type Kind =
  paths['/dashboard/api/channel-kinds']['get']['responses'][200]['content']['application/json']['kinds'][number];
type Connected = { webhook: { url: string | null; verify_token: string | null }; name: string; linked: boolean };

/** The business's channels: connected from the form of their provider kind, re-paced in place, deleted. */
export function ChannelsPage() {
  const kinds = useLoad(() => api.GET('/dashboard/api/channel-kinds'));
  const channels = useLoad(() => api.GET('/dashboard/api/channels'));
  const agents = useLoad(() => api.GET('/dashboard/api/agents'));
  const [connected, setConnected] = useState<Connected>();

  return (
    <SettingsPage title="Channels" lead="The accounts your business is reached on.">
      <SettingsSection title="Connected channels">
        <SettingsTable
          columns={[
            'Name',
            'Number',
            'Webhook URL',
            'Secrets',
            'Pace (messages per second)',
            'AI agent of new conversations',
          ]}
          actions
          rows={channels.data?.channels}
          error={channels.error}
          empty="No channel yet."
          rowKey={(channel) => channel.id}
        >
          {(channel) => (
            <>
              <td>{channel.name}</td>
              <td>{channel.identifier}</td>
              <td className={styles.long}>{channel.webhook_url ?? '—'}</td>
              <td>
                {Object.entries(channel.secrets)
                  .map(([name, mask]) => `${fieldLabel(name)} ${mask}`)
                  .join(', ') || '—'}
                {channel.needs_credentials && (
                  <p className={styles.warning} role="status">
                    Needs new credentials: the provider refused the access token. The operator replaces it (PATCH of the
                    channel's provider in the operator API).
                  </p>
                )}
              </td>
              <td>
                <PaceForm
                  id={channel.id}
                  name={channel.name}
                  pace={channel.pace_per_second}
                  onSaved={channels.reload}
                />
              </td>
              <td>
                <AgentChoice
                  id={channel.id}
                  name={channel.name}
                  agentId={channel.agent_id}
                  agents={agents.data?.agents ?? []}
                  onSaved={channels.reload}
                />
              </td>
              <td>
                <DeleteChannel channel={channel} onDeleted={channels.reload} />
              </td>
            </>
          )}
        </SettingsTable>
      </SettingsSection>

      {channels.data?.channels
        .filter((channel) => channel.linked)
        .map((channel) => (
          <ChannelLink key={channel.id} id={channel.id} name={channel.name} />
        ))}

      {connected && (
        <section className={styles.section} aria-labelledby="connected-heading">
          <div className={styles.result} role="status">
            <h2 id="connected-heading">{connected.name} is connected</h2>
            <p className={styles.hint}>
              {connected.webhook.url
                ? 'Paste these into your Meta app’s webhook settings. The verify token is shown only now.'
                : connected.linked
                  ? 'Link the phone below: its QR code is shown once you ask for it.'
                  : 'Its new messages are read from now on.'}
            </p>
            {connected.webhook.url && <CopyField label="Webhook URL" value={connected.webhook.url} />}
            {connected.webhook.verify_token && (
              <CopyField label="Verify token" value={connected.webhook.verify_token} />
            )}
          </div>
        </section>
      )}

      <SettingsSection title="Connect a channel">
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
      </SettingsSection>
    </SettingsPage>
  );
}

type ChannelChange = NonNullable<
  paths['/dashboard/api/channels/{id}']['patch']['requestBody']
>['content']['application/json'];

/** A change of one channel made in place in its row: the form, its Saved note and its error. */
function ChannelChangeForm({
  id,
  change,
  submit,
  onSaved,
  children,
}: {
  id: string;
  change: () => ChannelChange;
  submit: string;
  onSaved: () => Promise<void>;
  children: ReactNode;
}) {
  const [error, setError] = useState<string>();
  const [saved, setSaved] = useState(false);
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setSaved(false);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/dashboard/api/channels/{id}', { params: { path: { id } }, body: change() });
    if (!data) return setError(errorMessage(failure, response));
    setSaved(true);
    await onSaved();
  };
  return (
    <form className={styles.inline} onSubmit={(event) => void save(event)}>
      {children}
      <button type="submit" className="button">
        {submit}
      </button>
      {saved && <span role="status">Saved</span>}
      <ErrorNote message={error} />
    </form>
  );
}

/** The channel's default AI agent: every new conversation of the channel gets it. */
function AgentChoice({
  id,
  name,
  agentId,
  agents,
  onSaved,
}: {
  id: string;
  name: string;
  agentId: string | null;
  agents: { id: string; name: string }[];
  onSaved: () => Promise<void>;
}) {
  const [value, setValue] = useState(agentId ?? '');
  return (
    <ChannelChangeForm
      id={id}
      change={() => ({ agent_id: value === '' ? null : value })}
      submit="Apply"
      onSaved={onSaved}
    >
      <select aria-label={`AI agent of ${name}`} value={value} onChange={(event) => setValue(event.target.value)}>
        <option value="">None</option>
        {agents.map((agent) => (
          <option key={agent.id} value={agent.id}>
            {agent.name}
          </option>
        ))}
      </select>
    </ChannelChangeForm>
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
  return (
    <ChannelChangeForm id={id} change={() => ({ pace_per_second: Number(value) })} submit="Save" onSaved={onSaved}>
      <input
        type="number"
        min={1}
        max={1000}
        required
        aria-label={`Pace of ${name}`}
        value={value}
        onChange={(event) => setValue(event.target.value)}
      />
    </ChannelChangeForm>
  );
}

/** Deleting a channel, after a confirmation that names it. */
function DeleteChannel({ channel, onDeleted }: { channel: Channel; onDeleted: () => Promise<void> }) {
  const remove = async () => {
    const { error, response } = await api.DELETE('/dashboard/api/channels/{id}', {
      params: { path: { id: channel.id } },
    });
    if (!response.ok) return errorMessage(error, response);
    await onDeleted();
  };
  return (
    <ConfirmDialog
      label={
        <>
          Delete<span className="visually-hidden"> {channel.name}</span>
        </>
      }
      title={`Delete the channel ${channel.name}?`}
      action="Delete channel"
      onConfirm={remove}
    >
      <p>
        {channel.name} ({channel.identifier}) will no longer send or receive messages. Its conversations and messages
        stay, and the number can be connected again later.
      </p>
    </ConfirmDialog>
  );
}

/** What the channel's own address is, by the kind's address kind. */
const identifierField: Record<string, { label: string; hint?: string; inputMode: 'tel' | 'email' | 'text' }> = {
  phone: { label: 'Business number', hint: 'The number with its country code, e.g. +15551234567.', inputMode: 'tel' },
  email: { label: 'Email address', hint: "The mailbox's address, e.g. hello@example.com.", inputMode: 'email' },
  other: { label: 'Identifier', inputMode: 'text' },
};

/** Sets a field of the provider object by its path (`smtp.host` in the object `smtp`). */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const [head, ...rest] = path.split('.');
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  const inner = (target[head] ??= {}) as Record<string, unknown>;
  setPath(inner, rest.join('.'), value);
}

function ConnectForm({ kind, onConnected }: { kind: Kind; onConnected: (result: Connected) => void }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);
  const set = (name: string, value: string) => setValues((current) => ({ ...current, [name]: value }));
  const headingId = useId();
  const identifier = identifierField[kind.address_kind] ?? identifierField.other;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setError(undefined);
    const provider: Record<string, unknown> = { kind: kind.kind };
    for (const field of kind.fields) {
      const value = values[field.name];
      if (field.type === 'boolean') setPath(provider, field.name, value === 'true');
      else if (value && field.type === 'list') setPath(provider, field.name, value.split(/[\s,]+/).filter(Boolean));
      else if (value) setPath(provider, field.name, field.type === 'integer' ? Number(value) : value);
    }
    const body = {
      type: kind.channel_types[0],
      identifier: (kind.identifier_field ? values[kind.identifier_field] : values.identifier) ?? '',
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
    onConnected({ webhook: data.webhook, name: data.channel.name, linked: data.channel.linked });
  };

  return (
    <form
      className={`${styles.form} ${styles.card}`}
      aria-labelledby={headingId}
      onSubmit={(event) => void submit(event)}
    >
      <h3 id={headingId}>{kind.title}</h3>
      {/* A kind not addressed by phone or email is identified by its account field (a page id), asked for below. */}
      {kind.identifier_field === null && (
        <Field label={identifier.label} hint={identifier.hint}>
          {(props) => (
            <input
              {...props}
              required
              inputMode={identifier.inputMode}
              value={values.identifier ?? ''}
              onChange={(event) => set('identifier', event.target.value)}
            />
          )}
        </Field>
      )}
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
          {(props) =>
            field.type === 'boolean' ? (
              <input
                {...props}
                name={field.name}
                type="checkbox"
                checked={values[field.name] === 'true'}
                onChange={(event) => set(field.name, String(event.target.checked))}
              />
            ) : (
              <input
                {...props}
                name={field.name}
                type={
                  field.secret
                    ? 'password'
                    : field.type === 'url'
                      ? 'url'
                      : field.type === 'integer'
                        ? 'number'
                        : 'text'
                }
                autoComplete="off"
                required={field.required}
                pattern={field.pattern}
                maxLength={field.max_length}
                value={values[field.name] ?? ''}
                onChange={(event) => set(field.name, event.target.value)}
              />
            )
          }
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

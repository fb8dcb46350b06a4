import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client';
import type { paths } from '../../api/schema';
import { useLoad } from '../../api/use-load';
import { ErrorNote } from '../../shell/error-note';
import { ActivationRulesForm } from './activation-rules-form';
import { SettingsPage, SettingsSection, SettingsTable } from './settings-kit';
import styles from './settings.module.css';

type Agent = paths['/dashboard/api/agents/{id}']['get']['responses'][200]['content']['application/json']['agent'];

/** The business's AI agents: each one's prompt, model and tools, changed as the public API changes them. */
export function AgentsPage() {
  const agents = useLoad(() => api.GET('/dashboard/api/agents'));
  const [open, setOpen] = useState<string>();

  return (
    <SettingsPage title="AI agents" lead="Agents that answer on your behalf.">
      <SettingsSection title="Agents">
        <SettingsTable
          columns={['Name', 'Type', 'Model', 'Answers']}
          actions
          rows={agents.data?.agents}
          error={agents.error}
          empty="No AI agent yet: the operator of the service creates them."
          rowKey={(agent) => agent.id}
        >
          {(agent) => (
            <>
              <td>{agent.name}</td>
              <td>{agent.type}</td>
              <td>{agent.model ?? 'Default'}</td>
              <td>{agent.status === 'active' ? 'Yes' : `No: ${agent.inactive_reason ?? 'inactive'}`}</td>
              <td>
                <button
                  type="button"
                  className="button"
                  aria-expanded={open === agent.id}
                  onClick={() => setOpen(open === agent.id ? undefined : agent.id)}
                >
                  Configure<span className="visually-hidden"> {agent.name}</span>
                </button>
              </td>
            </>
          )}
        </SettingsTable>
      </SettingsSection>
      {open && <AgentEditor key={open} id={open} onSaved={agents.reload} />}
    </SettingsPage>
  );
}

function AgentEditor({ id, onSaved }: { id: string; onSaved: () => Promise<void> }) {
  const agent = useLoad(() => api.GET('/dashboard/api/agents/{id}', { params: { path: { id } } }), id);
  // A change may change whether the agent answers: the list and this agent are read again.
  const saved = async () => {
    await Promise.all([agent.reload(), onSaved()]);
  };
  if (agent.error) return <ErrorNote message={agent.error} />;
  if (!agent.data) return <p className="loading">Loading…</p>;
  return (
    <>
      <AgentForm agent={agent.data.agent} onSaved={saved} />
      <ActivationRulesForm agent={agent.data.agent} onSaved={saved} />
    </>
  );
}

function AgentForm({ agent, onSaved }: { agent: Agent; onSaved: () => Promise<void> }) {
  const [name, setName] = useState(agent.name);
  const [model, setModel] = useState(agent.model ?? '');
  const [prompt, setPrompt] = useState(agent.system_prompt);
  const [tools, setTools] = useState(
    Object.fromEntries(Object.entries(agent.tools).map(([tool, value]) => [tool, value.enabled])),
  );
  const [error, setError] = useState<string>();
  const [saved, setSaved] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setSaved(false);
    // Only what changed is sent: the service merges it into the stored configuration.
    const changes = {
      ...(name !== agent.name ? { name } : {}),
      ...(model && model !== agent.model ? { model } : {}),
      ...(prompt !== agent.system_prompt ? { system_prompt: prompt } : {}),
      tools: Object.fromEntries(Object.entries(tools).map(([tool, enabled]) => [tool, { enabled }])),
    };
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/dashboard/api/agents/{id}', {
      params: { path: { id: agent.id } },
      body: { agent: changes },
    });
    if (!data) return setError(errorMessage(failure, response));
    setSaved(true);
    await onSaved();
  };

  return (
    <SettingsSection title={<>Configure {agent.name}</>}>
      {agent.status === 'inactive' && (
        <p className={styles.hint} role="note">
          This agent does not answer now: {agent.inactive_reason}.
        </p>
      )}
      <form className={`${styles.form} ${styles.card}`} onSubmit={(event) => void submit(event)}>
        <div className={styles.row}>
          <label className="field">
            <span className="field-label">Name</span>
            <input required maxLength={200} value={name} onChange={(event) => setName(event.target.value)} />
          </label>
          <label className="field">
            <span className="field-label">Model</span>
            <input
              maxLength={100}
              placeholder="The service's default"
              value={model}
              onChange={(event) => setModel(event.target.value)}
            />
          </label>
        </div>
        <label className="field">
          <span className="field-label">System prompt</span>
          <textarea rows={8} maxLength={50000} value={prompt} onChange={(event) => setPrompt(event.target.value)} />
        </label>
        {Object.keys(tools).length > 0 && (
          <fieldset className={styles.members}>
            <legend>Tools</legend>
            {Object.entries(tools).map(([tool, enabled]) => (
              <label key={tool}>
                <input
                  type="checkbox"
                  checked={enabled}
                  onChange={(event) => setTools((current) => ({ ...current, [tool]: event.target.checked }))}
                />
                {tool}
              </label>
            ))}
          </fieldset>
        )}
        <ErrorNote message={error} />
        <div className={styles.inline}>
          <button type="submit" className="button button-primary">
            Save agent
          </button>
          {saved && <span role="status">Saved</span>}
        </div>
      </form>
    </SettingsSection>
  );
}

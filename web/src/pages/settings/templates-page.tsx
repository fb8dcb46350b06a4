import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client';
import type { paths } from '../../api/schema';
import { useLoad } from '../../api/use-load';
import { ConfirmDialog } from '../../shell/dialog';
import { ErrorNote } from '../../shell/error-note';
import { Field, SettingsPage, SettingsSection, SettingsTable } from './settings-kit';
import styles from './settings.module.css';

type Template =
  paths['/dashboard/api/templates']['get']['responses'][200]['content']['application/json']['templates'][number];
type Body = paths['/dashboard/api/templates']['post']['requestBody']['content']['application/json'];

const CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const;

/** The business's message templates: created, replaced and deleted under the templates' rules. */
export function TemplatesPage() {
  const templates = useLoad(() => api.GET('/dashboard/api/templates'));
  const [editing, setEditing] = useState<Template | null>(null);

  const remove = async (template: Template) => {
    const { response, error } = await api.DELETE('/dashboard/api/templates/{id}', {
      params: { path: { id: template.id } },
    });
    if (!response.ok) return errorMessage(error, response);
    await templates.reload();
  };

  return (
    <SettingsPage title="Templates" lead="Approved messages to start a conversation.">
      <SettingsSection title="Templates">
        <SettingsTable
          columns={['Name', 'Language', 'Body']}
          actions
          rows={templates.data?.templates}
          error={templates.error}
          empty="No template yet."
          rowKey={(template) => template.id}
        >
          {(template) => (
            <>
              <td>{template.name}</td>
              <td>{template.language}</td>
              <td>{template.body}</td>
              <td>
                <div className={styles.inline}>
                  <button type="button" className="button" onClick={() => setEditing(template)}>
                    Edit<span className="visually-hidden"> {template.name}</span>
                  </button>
                  <ConfirmDialog
                    label={
                      <>
                        Delete<span className="visually-hidden"> {template.name}</span>
                      </>
                    }
                    title={`Delete the template ${template.name}?`}
                    action="Delete template"
                    onConfirm={() => remove(template)}
                  >
                    <p>It can no longer be sent. Messages already sent with it stay.</p>
                  </ConfirmDialog>
                </div>
              </td>
            </>
          )}
        </SettingsTable>
      </SettingsSection>
      <TemplateForm
        key={editing?.id ?? 'new'}
        template={editing}
        onDone={async () => {
          setEditing(null);
          await templates.reload();
        }}
      />
    </SettingsPage>
  );
}

function TemplateForm({ template, onDone }: { template: Template | null; onDone: () => Promise<void> }) {
  const [values, setValues] = useState({
    name: template?.name ?? '',
    language: template?.language ?? 'en',
    category: template?.category ?? '',
    body: template?.body ?? '',
    header: template?.header ?? '',
    footer: template?.footer ?? '',
  });
  const [error, setError] = useState<string>();
  const set = (name: keyof typeof values, value: string) => setValues((current) => ({ ...current, [name]: value }));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    const body: Body = {
      name: values.name,
      language: values.language,
      body: values.body,
      ...(values.category ? { category: values.category as Body['category'] } : {}),
      ...(values.header ? { header: values.header } : {}),
      ...(values.footer ? { footer: values.footer } : {}),
      ...(template?.channel_id ? { channel_id: template.channel_id } : {}),
      ...(template ? { buttons: template.buttons } : {}),
    };
    const {
      data,
      error: failure,
      response,
    } = template
      ? await api.PUT('/dashboard/api/templates/{id}', { params: { path: { id: template.id } }, body })
      : await api.POST('/dashboard/api/templates', { body });
    if (!data) return setError(errorMessage(failure, response));
    await onDone();
  };

  const heading = template ? `Edit ${template.name}` : 'New template';
  return (
    <SettingsSection title={heading}>
      <form className={`${styles.form} ${styles.card}`} onSubmit={(event) => void submit(event)}>
        <div className={styles.row}>
          <Field label="Name" hint="Lower-case letters, digits and underscores.">
            {(props) => (
              <input
                {...props}
                required
                pattern="[a-z0-9_]{1,512}"
                value={values.name}
                onChange={(event) => set('name', event.target.value)}
              />
            )}
          </Field>
          <label className="field">
            <span className="field-label">Language</span>
            <input required value={values.language} onChange={(event) => set('language', event.target.value)} />
          </label>
          <Field label="Category">
            {(props) => (
              <select {...props} value={values.category} onChange={(event) => set('category', event.target.value)}>
                <option value="">None</option>
                {CATEGORIES.map((category) => (
                  <option key={category} value={category}>
                    {category.charAt(0) + category.slice(1).toLowerCase()}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <label className="field">
          <span className="field-label">Header (optional)</span>
          <input maxLength={60} value={values.header} onChange={(event) => set('header', event.target.value)} />
        </label>
        <Field label="Body" hint="Placeholders: {{1}}, {{2}} … or named ones like {{first_name}}, not both.">
          {(props) => (
            <textarea
              {...props}
              required
              rows={4}
              maxLength={1024}
              value={values.body}
              onChange={(event) => set('body', event.target.value)}
            />
          )}
        </Field>
        <label className="field">
          <span className="field-label">Footer (optional)</span>
          <input maxLength={60} value={values.footer} onChange={(event) => set('footer', event.target.value)} />
        </label>
        <ErrorNote message={error} />
        <div className={styles.inline}>
          <button type="submit" className="button button-primary">
            {template ? 'Save template' : 'Create template'}
          </button>
          {template && (
            <button type="button" className="button" onClick={() => void onDone()}>
              Cancel
            </button>
          )}
        </div>
      </form>
    </SettingsSection>
  );
}

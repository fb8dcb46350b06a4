import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../api/client';
import type { paths } from '../api/schema';
import type { ContactProfile } from './contact-page';
import { ErrorNote } from '../shell/error-note';
import styles from './contacts.module.css';

type UpdateBody = NonNullable<
  paths['/dashboard/api/contacts/{uuid}']['patch']['requestBody']
>['content']['application/json'];

const asText = (value: unknown) =>
  value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);

/**
 * The edit form: the name, the tags (separated by commas) and each custom field, by its definition's
 * name. Only what changed is sent; an emptied custom field is removed.
 */
export function ContactEditForm({
  profile,
  onSaved,
}: {
  profile: ContactProfile;
  onSaved: (profile: ContactProfile) => void;
}) {
  const { contact } = profile;
  const [name, setName] = useState(contact.name);
  const [tags, setTags] = useState(contact.tags.join(', '));
  const [fields, setFields] = useState(() =>
    Object.fromEntries(profile.custom_fields.map((field) => [field.key, asText(field.value)])),
  );
  const [pending, setPending] = useState(false);
  const [message, setMessage] = useState<{ error: boolean; text: string } | undefined>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const body: UpdateBody = {};
    const trimmed = name.trim();
    if (trimmed && trimmed !== contact.name) body.name = trimmed;
    const tagList = [
      ...new Set(
        tags
          .split(',')
          .map((tag) => tag.trim())
          .filter(Boolean),
      ),
    ];
    if (tagList.join('\n') !== contact.tags.join('\n')) body.tags = tagList;
    const custom: Record<string, string | null> = {};
    for (const field of profile.custom_fields) {
      const value = fields[field.key] ?? '';
      if (value === asText(field.value)) continue;
      custom[field.key] = value === '' ? null : value;
    }
    if (Object.keys(custom).length > 0) body.custom_fields = custom;
    if (Object.keys(body).length === 0) {
      setMessage({ error: false, text: 'Nothing to save.' });
      return;
    }
    setPending(true);
    setMessage(undefined);
    try {
      const { data, error, response } = await api.PATCH('/dashboard/api/contacts/{uuid}', {
        params: { path: { uuid: contact.id } },
        body,
      });
      if (data) onSaved(data);
      else setMessage({ error: true, text: errorMessage(error, response) });
    } catch (failure) {
      setMessage({ error: true, text: errorMessage(failure) });
    } finally {
      setPending(false);
    }
  };

  return (
    <form className={styles.form} onSubmit={(event) => void submit(event)}>
      <label className="field">
        <span className="field-label">Name</span>
        <input name="name" value={name} maxLength={400} onChange={(event) => setName(event.target.value)} />
      </label>
      <div className="field">
        <label className="field-label" htmlFor="contact-tags-input">
          Tags
        </label>
        <input
          id="contact-tags-input"
          name="tags"
          value={tags}
          aria-describedby="contact-tags-hint"
          onChange={(event) => setTags(event.target.value)}
        />
        <span id="contact-tags-hint" className={styles.muted}>
          Separate tags with commas.
        </span>
      </div>
      {profile.custom_fields.map((field) => (
        <label key={field.key} className="field">
          <span className="field-label">{field.name ?? field.key}</span>
          <input
            name={`custom-${field.key}`}
            value={fields[field.key] ?? ''}
            maxLength={2000}
            onChange={(event) => setFields((current) => ({ ...current, [field.key]: event.target.value }))}
          />
        </label>
      ))}
      {message?.error && <ErrorNote message={message.text} />}
      {message && !message.error && (
        <p className={styles.status} role="status">
          {message.text}
        </p>
      )}
      <div className={styles.actions}>
        <button className="button button-primary" type="submit" disabled={pending} aria-busy={pending}>
          Save changes
        </button>
      </div>
    </form>
  );
}

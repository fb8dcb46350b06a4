// What the settings pages share: their frame and sections, their lists' table, a read-only value with a
// button that copies it, and labelled fields.
import { useId, useState, type ReactNode } from 'react';
import { useDocumentTitle } from '../../shell/document-title';
import { ErrorNote } from '../../shell/error-note';
import page from '../page.module.css';
import styles from './settings.module.css';

/** A settings page: its title (the document's too) and what it is for. */
export function SettingsPage({ title, lead, children }: { title: string; lead: string; children: ReactNode }) {
  useDocumentTitle(title);
  return (
    <div className={page.page}>
      <h1>{title}</h1>
      <p className={page.lead}>{lead}</p>
      {children}
    </div>
  );
}

/** A section of a settings page, named by its heading. */
export function SettingsSection({ title, children }: { title: ReactNode; children: ReactNode }) {
  const id = useId();
  return (
    <section className={styles.section} aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/**
 * A list of a settings page as a table, stacked rows on a phone: the error of its read (or of an
 * action on it), a line while it loads and one when it is empty, else a row per item. With `actions`,
 * a last column for the row's buttons, its heading read only by screen readers.
 */
export function SettingsTable<Row>({
  columns,
  actions,
  rows,
  error,
  empty,
  rowKey,
  children,
}: {
  columns: string[];
  actions?: boolean;
  /** Undefined until read. */
  rows: readonly Row[] | undefined;
  error?: string;
  empty: string;
  rowKey: (row: Row) => string;
  /** A row's cells. */
  children: (row: Row) => ReactNode;
}) {
  return (
    <>
      <ErrorNote message={error} />
      {rows === undefined && !error && <p className={styles.empty}>Loading…</p>}
      {rows?.length === 0 && <p className={styles.empty}>{empty}</p>}
      {rows && rows.length > 0 && (
        <table className={styles.table}>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column} scope="col">
                  {column}
                </th>
              ))}
              {actions && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={rowKey(row)}>{children(row)}</tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** A value to paste elsewhere (a webhook URL, a token, a link): shown read-only with a Copy button. */
export function CopyField({ label, value }: { label: string; value: string }) {
  const id = useId();
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard?.writeText(value).catch(() => undefined);
    setCopied(true);
  };
  return (
    <div className="field">
      <label className="field-label" htmlFor={id}>
        {label}
      </label>
      <div className={styles.copy}>
        <input id={id} readOnly value={value} onFocus={(event) => event.target.select()} />
        <button type="button" className="button" onClick={() => void copy()} aria-label={`Copy ${label}`}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </div>
  );
}

/** A field name of a provider's config as a person reads it: `phone_number_id` is "Phone number ID". */
export function fieldLabel(name: string): string {
  // A nested object's field (`smtp.host`) is named after both: "SMTP host".
  const words = name
    .split(/[_.]/)
    .map((word) => (['id', 'url', 'api', 'smtp', 'imap'].includes(word) ? word.toUpperCase() : word));
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * A labelled control with a hint beside, not inside, its label: the hint describes the control
 * (aria-describedby) without becoming part of its name.
 */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: string;
  children: (props: { id: string; 'aria-describedby'?: string }) => ReactNode;
}) {
  const id = useId();
  return (
    <div className="field">
      <label className="field-label" htmlFor={id}>
        {label}
      </label>
      {children({ id, ...(hint ? { 'aria-describedby': `${id}-hint` } : {}) })}
      {hint && (
        <span id={`${id}-hint`} className={styles.hint}>
          {hint}
        </span>
      )}
    </div>
  );
}

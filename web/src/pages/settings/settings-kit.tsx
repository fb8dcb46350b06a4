// What the settings pages share: loading an answer of the session API, showing its error, and a read-only
// value with a button that copies it.
import { useCallback, useEffect, useId, useState, type ReactNode } from 'react';
import { errorMessage } from '../../api/client';
import styles from './settings.module.css';

/** An answer of the API or the message of its error, loaded again by `reload`. */
export function useLoaded<T>(load: () => Promise<{ data?: T; error?: unknown; response: Response }>) {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  // The first call's loader is the page's: a page loads the same resource all its life.
  const [loader] = useState(() => load);
  const reload = useCallback(() => settle(loader).then(setState), [loader]);
  useEffect(() => {
    let current = true;
    void settle(loader).then((next) => current && setState(next));
    return () => {
      current = false;
    };
  }, [loader]);
  return { ...state, reload };
}

async function settle<T>(
  load: () => Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<{ data?: T; error?: string }> {
  try {
    const { data, error, response } = await load();
    return data === undefined ? { error: errorMessage(error, response) } : { data };
  } catch {
    return { error: errorMessage(undefined) };
  }
}

/** A call's error as the page shows it: announced, in the service's words. */
export function ErrorNote({ message }: { message?: string }) {
  if (!message) return null;
  return (
    <p className={styles.error} role="alert">
      {message}
    </p>
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
  const words = name.split('_').map((word) => (['id', 'url', 'api'].includes(word) ? word.toUpperCase() : word));
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

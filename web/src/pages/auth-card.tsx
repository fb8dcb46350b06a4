import type { FormEvent, ReactNode } from 'react';
import styles from './login-page.module.css';

/** The card of the signed-out pages (sign-in, an invitation): brand, title, the form's fields, its error and button. */
export function AuthCard({
  title,
  lead,
  error,
  pending,
  submit,
  onSubmit,
  children,
}: {
  title: string;
  lead: string;
  error: string | undefined;
  pending: boolean;
  submit: string;
  onSubmit: (event: FormEvent<HTMLFormElement>) => Promise<void>;
  children: ReactNode;
}) {
  return (
    <main className={styles.page}>
      <div className={styles.card}>
        <p className={styles.brand} aria-hidden="true">
          <span className={styles.logo} />
          Messaging
        </p>
        <h1 className={styles.title}>{title}</h1>
        <p className={styles.lead}>{lead}</p>
        <form className={styles.form} onSubmit={(event) => void onSubmit(event)}>
          {children}
          {error && (
            <p className={styles.error} role="alert">
              {error}
            </p>
          )}
          <button className="button button-primary" type="submit" disabled={pending} aria-busy={pending}>
            {submit}
          </button>
        </form>
      </div>
    </main>
  );
}

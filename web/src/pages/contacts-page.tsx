import { useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api } from '../api/client';
import type { paths } from '../api/schema';
import { useLoad } from '../api/use-load';
import { useDocumentTitle } from '../shell/document-title';
import { ErrorNote } from '../shell/error-note';
import { Loading } from '../shell/loading';
import styles from './contacts.module.css';

type ContactList = paths['/dashboard/api/contacts']['get']['responses'][200]['content']['application/json'];
export type ContactSummary = ContactList['contacts'][number];

/** What names a contact in a list: its name, else an identifier. */
export function contactLabel(contact: { name: string; email: string | null; phone_number: string | null }): string {
  return contact.name || contact.email || (contact.phone_number ? `+${contact.phone_number}` : 'Unnamed contact');
}

/** The contacts of the business, newest first, by pages (the cursor is in the address), or those a search finds. */
export function ContactsPage() {
  useDocumentTitle('Contacts');
  const [params, setParams] = useSearchParams();
  const q = params.get('q') ?? '';
  const cursor = params.get('cursor') ?? undefined;
  const [text, setText] = useState(q);
  const {
    data: result,
    error,
    loading,
  } = useLoad(
    () => api.GET('/dashboard/api/contacts', { params: { query: q ? { q } : { cursor, limit: 25 } } }),
    `${q}\n${cursor ?? ''}`,
  );

  const search = (event: FormEvent) => {
    event.preventDefault();
    const wanted = text.trim();
    setParams(wanted ? { q: wanted } : {});
  };

  return (
    <div className={styles.page}>
      <h1>Contacts</h1>
      <form role="search" className={styles.search} onSubmit={search}>
        <label className="field">
          <span className="field-label">Search by email, phone or external id</span>
          <input type="search" name="q" value={text} onChange={(event) => setText(event.target.value)} />
        </label>
        <button className="button button-primary" type="submit">
          Search
        </button>
        {q && (
          <button
            className="button"
            type="button"
            onClick={() => {
              setText('');
              setParams({});
            }}
          >
            Show all
          </button>
        )}
      </form>
      <ErrorNote message={error} />
      {loading && <Loading />}
      {result && (
        <>
          <p className={styles.status} role="status">
            {q
              ? `${result.contacts.length} ${result.contacts.length === 1 ? 'contact matches' : 'contacts match'} “${q}”.`
              : result.contacts.length === 0
                ? 'No contacts yet.'
                : `Showing ${result.contacts.length} contacts, newest first.`}
          </p>
          {result.contacts.length > 0 && (
            <ul className={styles.list} aria-label="Contacts">
              {result.contacts.map((contact) => (
                <li key={contact.id}>
                  <Link className={styles.row} to={`/contacts/${contact.id}`}>
                    <span className={styles.name}>{contactLabel(contact)}</span>
                    <span className={styles.muted}>
                      {[contact.email, contact.phone_number && `+${contact.phone_number}`, contact.external_id]
                        .filter(Boolean)
                        .join(' · ') || 'No email or phone'}
                    </span>
                  </Link>
                </li>
              ))}
            </ul>
          )}
          <nav className={styles.pager} aria-label="Pages of contacts">
            {cursor && !q && (
              <button className="button" type="button" onClick={() => setParams({})}>
                First page
              </button>
            )}
            {result.next_cursor && (
              <button className="button" type="button" onClick={() => setParams({ cursor: result.next_cursor ?? '' })}>
                Next page
              </button>
            )}
          </nav>
        </>
      )}
    </div>
  );
}

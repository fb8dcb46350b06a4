import { Link, useLocation, useParams } from 'react-router';
import { api } from '../api/client';
import type { paths } from '../api/schema';
import { useLoad } from '../api/use-load';
import { canManage, useSignedIn } from '../session/session';
import { useDocumentTitle } from '../shell/document-title';
import { ErrorNote } from '../shell/error-note';
import { Loading } from '../shell/loading';
import { ContactEditForm } from './contact-edit-form';
import { DeleteContactDialog, MergeContactDialog } from './contact-dialogs';
import { contactLabel } from './contacts-page';
import styles from './contacts.module.css';

export type ContactProfile =
  paths['/dashboard/api/contacts/{uuid}']['get']['responses'][200]['content']['application/json'];

/** How the page names the address kinds channels know a contact by. */
const ADDRESS_KINDS: Record<string, string> = {
  page_scoped_id: 'Messenger',
  instagram_scoped_id: 'Instagram',
  tiktok_conversation_id: 'TikTok',
  visitor_id: 'Website visitor',
};

const dateTime = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');
const shown = (value: unknown) =>
  value === null || value === undefined || value === ''
    ? '—'
    : typeof value === 'string'
      ? value
      : JSON.stringify(value);

/**
 * A contact's page: its fields, custom fields, tags, aliases and conversations; edit, merge and
 * (admins and owners) delete.
 */
export function ContactPage() {
  const { contactId = '' } = useParams();
  const manager = canManage(useSignedIn().user.role);
  // A merge that keeps this contact navigates to its own address: a new location, read again.
  const { key } = useLocation();
  const loaded = useLoad(
    () => api.GET('/dashboard/api/contacts/{uuid}', { params: { path: { uuid: contactId } } }),
    `${contactId}:${key}`,
  );
  const profile = loaded.data;
  const error = loaded.status === 404 ? 'This contact does not exist.' : loaded.error;
  useDocumentTitle(profile ? contactLabel(profile.contact) : 'Contact');

  if (error)
    return (
      <div className={styles.page}>
        <h1>Contact</h1>
        <ErrorNote message={error} />
        <p>
          <Link to="/contacts">Back to contacts</Link>
        </p>
      </div>
    );
  if (!profile) return <Loading />;
  const { contact } = profile;

  return (
    <div className={styles.page}>
      <p>
        <Link to="/contacts">Back to contacts</Link>
      </p>
      <h1>{contactLabel(contact)}</h1>

      <section className={styles.card} aria-labelledby="contact-details">
        <h2 id="contact-details">Details</h2>
        <dl className={styles.details}>
          <dt>First name</dt>
          <dd>{shown(contact.first_name)}</dd>
          <dt>Last name</dt>
          <dd>{shown(contact.last_name)}</dd>
          <dt>Email</dt>
          <dd>{shown(contact.email)}</dd>
          <dt>Phone</dt>
          <dd>{contact.phone_number ? `+${contact.phone_number}` : '—'}</dd>
          <dt>External id</dt>
          <dd>{shown(contact.external_id)}</dd>
          <dt>Source</dt>
          <dd>{shown(contact.source)}</dd>
          <dt>Assigned to</dt>
          <dd>{shown(contact.assigned_user)}</dd>
          <dt>Created</dt>
          <dd>{dateTime(contact.created_at)}</dd>
        </dl>
      </section>

      <section className={styles.card} aria-labelledby="contact-custom-fields">
        <h2 id="contact-custom-fields">Custom fields</h2>
        {profile.custom_fields.length === 0 ? (
          <p className={styles.status}>No custom fields.</p>
        ) : (
          <dl className={styles.details}>
            {profile.custom_fields.map((field) => (
              <div key={field.key} style={{ display: 'contents' }}>
                <dt>{field.name ?? field.key}</dt>
                <dd>{shown(field.value)}</dd>
              </div>
            ))}
          </dl>
        )}
      </section>

      <section className={styles.card} aria-labelledby="contact-tags">
        <h2 id="contact-tags">Tags</h2>
        {contact.tags.length === 0 ? (
          <p className={styles.status}>No tags.</p>
        ) : (
          <ul className={styles.tags}>
            {contact.tags.map((tag) => (
              <li key={tag} className={styles.tag}>
                {tag}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section className={styles.card} aria-labelledby="contact-aliases">
        <h2 id="contact-aliases">Aliases</h2>
        {profile.aliases.length === 0 ? (
          <p className={styles.status}>No aliases: a merge leaves the other contact’s email and phone here.</p>
        ) : (
          <ul className={styles.plain}>
            {profile.aliases.map((alias) => (
              <li key={`${alias.kind}:${alias.value}`}>
                {alias.kind === 'phone' ? 'Phone' : 'Email'}: {alias.value}
              </li>
            ))}
          </ul>
        )}
      </section>

      {profile.identities.length > 0 && (
        <section className={styles.card} aria-labelledby="contact-identities">
          <h2 id="contact-identities">Channel addresses</h2>
          <ul className={styles.plain}>
            {profile.identities.map((identity) => (
              <li key={`${identity.kind}:${identity.value}`}>
                {ADDRESS_KINDS[identity.kind] ?? identity.kind}: {identity.value}
              </li>
            ))}
          </ul>
        </section>
      )}

      <section className={styles.card} aria-labelledby="contact-conversations">
        <h2 id="contact-conversations">Conversations ({profile.conversation_count})</h2>
        {profile.conversations.length === 0 ? (
          <p className={styles.status}>No conversations.</p>
        ) : (
          <ul className={styles.plain}>
            {profile.conversations.map((conversation) => (
              <li key={conversation.id}>
                <Link to={`/conversations/${conversation.id}`}>
                  {conversation.channel} conversation of {dateTime(conversation.created_at)}
                </Link>{' '}
                <span className={styles.muted}>
                  · {conversation.message_count} {conversation.message_count === 1 ? 'message' : 'messages'} ·{' '}
                  {conversation.closed_at ? 'closed' : 'open'}
                </span>
              </li>
            ))}
          </ul>
        )}
      </section>

      <section className={styles.card} aria-labelledby="contact-edit">
        <h2 id="contact-edit">Edit contact</h2>
        <ContactEditForm key={contact.updated_at} profile={profile} onSaved={loaded.replace} />
      </section>

      <section className={styles.card} aria-labelledby="contact-more">
        <h2 id="contact-more">{manager ? 'Merge or delete' : 'Merge'}</h2>
        <div className={styles.actions}>
          <MergeContactDialog profile={profile} />
          {/* Deleting takes the contact's whole history: admins and owners only (403 to others). */}
          {manager && <DeleteContactDialog profile={profile} />}
        </div>
      </section>
    </div>
  );
}

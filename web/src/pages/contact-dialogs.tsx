import { useRef, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { api, errorMessage } from '../api/client';
import type { paths } from '../api/schema';
import { ConfirmDialog, Dialog, DialogActions } from '../shell/dialog';
import type { ContactProfile } from './contact-page';
import { contactLabel, type ContactSummary } from './contacts-page';
import styles from './contacts.module.css';

type Deletion =
  paths['/dashboard/api/contacts/{uuid}/deletion']['get']['responses'][200]['content']['application/json'];

const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;

/** Deleting the contact, after a confirmation that says what goes with it. */
export function DeleteContactDialog({ profile }: { profile: ContactProfile }) {
  const navigate = useNavigate();
  const [deletion, setDeletion] = useState<Deletion | undefined>();
  const [error, setError] = useState<string | undefined>();
  const id = profile.contact.id;

  const preview = () => {
    setDeletion(undefined);
    setError(undefined);
    api
      .GET('/dashboard/api/contacts/{uuid}/deletion', { params: { path: { uuid: id } } })
      .then(({ data, error: failure, response }) =>
        data ? setDeletion(data) : setError(errorMessage(failure, response)),
      )
      .catch((failure: unknown) => setError(errorMessage(failure)));
  };

  const remove = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.DELETE('/dashboard/api/contacts/{uuid}', {
      params: { path: { uuid: id } },
    });
    if (!data) return errorMessage(failure, response);
    await navigate('/contacts', { replace: true });
  };

  return (
    <ConfirmDialog
      label="Delete contact…"
      title="Delete this contact?"
      action="Delete contact"
      onOpen={preview}
      onConfirm={remove}
      ready={deletion !== undefined}
      error={error}
    >
      {deletion ? (
        <p>
          Deleting {contactLabel(profile.contact)} also deletes{' '}
          {plural(deletion.conversations, 'conversation', 'conversations')},{' '}
          {plural(deletion.messages, 'message', 'messages')}, {plural(deletion.events, 'event', 'events')} and{' '}
          {plural(deletion.media, 'attachment', 'attachments')}. This cannot be undone.
        </p>
      ) : (
        !error && <p className={styles.status}>Counting what goes with the contact…</p>
      )}
    </ConfirmDialog>
  );
}

const CHOSEN_FIELDS = [
  ['first_name', 'First name'],
  ['last_name', 'Last name'],
  ['email', 'Email'],
] as const;

/**
 * Merging this contact with another: find the other, choose which one stays, and for each field both
 * have with different values, whose value to keep. The rest follows the merge's rules (the one that
 * stays fills its empty fields from the other; tags and custom fields are combined).
 */
export function MergeContactDialog({ profile }: { profile: ContactProfile }) {
  return (
    <Dialog label="Merge with another contact…" title="Merge contacts">
      {(close) => <MergeForm profile={profile} close={close} />}
    </Dialog>
  );
}

function MergeForm({ profile, close }: { profile: ContactProfile; close: () => void }) {
  const navigate = useNavigate();
  const here = profile.contact;
  const [query, setQuery] = useState('');
  const [found, setFound] = useState<ContactSummary[] | undefined>();
  const [other, setOther] = useState<ContactProfile['contact'] | undefined>();
  // The radio follows the choice at once; the chosen contact's fields arrive after.
  const [chosenId, setChosenId] = useState<string | undefined>();
  const latestChoice = useRef<string | undefined>(undefined);
  const [keep, setKeep] = useState<'this' | 'other'>('this');
  const [choices, setChoices] = useState<Record<string, 'this' | 'other'>>({});
  const [error, setError] = useState<string | undefined>();
  const [pending, setPending] = useState(false);

  const search = async (event: FormEvent) => {
    event.preventDefault();
    if (!query.trim()) return;
    setError(undefined);
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/dashboard/api/contacts', {
      params: { query: { q: query.trim() } },
    });
    if (data) setFound(data.contacts.filter((contact) => contact.id !== here.id));
    else setError(errorMessage(failure, response));
  };

  const choose = async (id: string) => {
    setChosenId(id);
    latestChoice.current = id;
    setOther(undefined);
    setError(undefined);
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/dashboard/api/contacts/{uuid}', {
      params: { path: { uuid: id } },
    });
    // Only the answer for the latest choice counts, should an earlier one arrive after it.
    if (latestChoice.current !== id) return;
    if (data) {
      setOther(data.contact);
      setChoices({});
    } else setError(errorMessage(failure, response));
  };

  const conflicting = other
    ? CHOSEN_FIELDS.filter(([field]) => here[field] && other[field] && here[field] !== other[field])
    : [];

  const merge = async () => {
    if (!other) return;
    const [survivor, loser] = keep === 'this' ? [here, other] : [other, here];
    const fieldChoices: Record<string, 'survivor' | 'loser'> = {};
    for (const [field] of conflicting) {
      const from = choices[field] ?? keep;
      fieldChoices[field] = from === keep ? 'survivor' : 'loser';
    }
    setPending(true);
    try {
      const {
        data,
        error: failure,
        response,
      } = await api.POST('/dashboard/api/contacts/merge', {
        body: { survivor_id: survivor.id, loser_id: loser.id, field_choices: fieldChoices },
      });
      if (data) {
        close();
        await navigate(`/contacts/${data.survivor_id}`, { replace: true });
      } else setError(errorMessage(failure, response));
    } catch (failure) {
      setError(errorMessage(failure));
    } finally {
      setPending(false);
    }
  };

  return (
    <>
      <form role="search" className={styles.search} onSubmit={(event) => void search(event)}>
        <label className="field">
          <span className="field-label">Find the other contact by email, phone or external id</span>
          <input type="search" value={query} onChange={(event) => setQuery(event.target.value)} />
        </label>
        <button className="button" type="submit">
          Find
        </button>
      </form>
      {found && found.length === 0 && <p className={styles.status}>No other contact matches.</p>}
      {found && found.length > 0 && (
        <fieldset className={styles.fieldset}>
          <legend>Other contact</legend>
          {found.map((contact) => (
            <label key={contact.id} className={styles.choice}>
              <input
                type="radio"
                name="other-contact"
                checked={chosenId === contact.id}
                onChange={() => void choose(contact.id)}
              />
              {contactLabel(contact)} {contact.email && `(${contact.email})`}
            </label>
          ))}
        </fieldset>
      )}
      {other && (
        <>
          <fieldset className={styles.fieldset}>
            <legend>Which contact stays</legend>
            <label className={styles.choice}>
              <input type="radio" name="keep" checked={keep === 'this'} onChange={() => setKeep('this')} />
              Keep {contactLabel(here)} (this contact)
            </label>
            <label className={styles.choice}>
              <input type="radio" name="keep" checked={keep === 'other'} onChange={() => setKeep('other')} />
              Keep {contactLabel(other)}
            </label>
          </fieldset>
          {conflicting.map(([field, label]) => (
            <fieldset key={field} className={styles.fieldset}>
              <legend>{label}</legend>
              {(['this', 'other'] as const).map((side) => (
                <label key={side} className={styles.choice}>
                  <input
                    type="radio"
                    name={`choice-${field}`}
                    checked={(choices[field] ?? keep) === side}
                    onChange={() => setChoices((current) => ({ ...current, [field]: side }))}
                  />
                  {(side === 'this' ? here : other)[field]}
                </label>
              ))}
            </fieldset>
          ))}
          <p className={styles.status}>
            The contact that goes is deleted; its conversations, messages and tags move to the one that stays, and its
            email and phone still find it. This cannot be undone.
          </p>
        </>
      )}
      <DialogActions
        close={close}
        action="Merge contacts"
        onAction={() => void merge()}
        error={error}
        disabled={!other}
        pending={pending}
      />
    </>
  );
}

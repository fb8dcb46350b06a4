import { useEffect, useId, useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client';
import { useLoad } from '../../api/use-load';
import { ErrorNote } from '../../shell/error-note';
import { Field } from './settings-kit';
import styles from './settings.module.css';

/** How often the link is read again while it is shown: a QR code is replaced every 20 s or so. */
const POLL_MS = 2_000;

const stateText: Record<string, string> = {
  unlinked: 'Not linked',
  qr: 'Waiting for the phone',
  linked: 'Linked',
  logged_out: 'Logged out from the phone',
};

/**
 * A channel linked to a phone as a device (WhatsApp Web): its link's state, read every 2 s; the QR
 * code to scan while it waits, or a pairing code for a number typed here; linking again after a logout.
 */
export function ChannelLink({ id, name }: { id: string; name: string }) {
  const link = useLoad(() => api.GET('/dashboard/api/channels/{id}/link', { params: { path: { id } } }), id);
  const [error, setError] = useState<string>();
  const [phone, setPhone] = useState('');
  const headingId = useId();
  const { reload } = link;
  useEffect(() => {
    const timer = setInterval(() => void reload(), POLL_MS);
    return () => clearInterval(timer);
  }, [reload]);

  const ask = async (phoneNumber?: string) => {
    setError(undefined);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/dashboard/api/channels/{id}/link', {
      params: { path: { id } },
      body: phoneNumber ? { phone_number: phoneNumber } : {},
    });
    if (!data) return setError(errorMessage(failure, response));
    link.replace(data);
  };
  const pair = (event: FormEvent) => {
    event.preventDefault();
    void ask(phone);
  };

  const state = link.data;
  return (
    <section className={`${styles.card} ${styles.form}`} aria-labelledby={headingId}>
      <h3 id={headingId}>Phone of {name}</h3>
      <ErrorNote message={link.error} />
      {state && (
        <p role="status">
          {stateText[state.state]}
          {state.state === 'linked' && state.account ? ` (+${state.account})` : ''}
          {state.requested && state.state === 'unlinked' ? ': starting…' : ''}
        </p>
      )}
      {state?.state === 'logged_out' && (
        <p className={styles.warning}>
          The phone logged this device out. Its messages are no longer read or sent until it is linked again.
        </p>
      )}
      {state && (state.state === 'unlinked' || state.state === 'logged_out') && !state.requested && (
        <div>
          <button type="button" className="button button-primary" onClick={() => void ask()}>
            Link phone
          </button>
        </div>
      )}
      {state?.state === 'qr' && state.qr_image && (
        <>
          <p className={styles.hint}>
            On the phone, open WhatsApp, Settings, Linked devices, Link a device, and scan this code.
          </p>
          <img src={state.qr_image} alt="QR code to link the phone" width={264} height={264} />
          {state.pairing_code ? (
            <p>
              Or type this code on the phone (Link with phone number instead):{' '}
              <strong className={styles.code}>{state.pairing_code}</strong>
            </p>
          ) : (
            <form className={styles.inline} onSubmit={pair}>
              <Field label="Use a pairing code instead" hint="The phone's number with its country code">
                {(props) => (
                  <input
                    {...props}
                    type="tel"
                    required
                    value={phone}
                    onChange={(event) => setPhone(event.target.value)}
                  />
                )}
              </Field>
              <button type="submit" className="button">
                Show code
              </button>
            </form>
          )}
        </>
      )}
      <ErrorNote message={error} />
    </section>
  );
}

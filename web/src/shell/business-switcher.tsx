import { useState, type ChangeEvent } from 'react';
import { useNavigate } from 'react-router';
import { useSession, useSignedIn } from '../session/session';
import styles from './sidebar.module.css';

/** For a user of several businesses: the session acts for one, chosen here; its pages start again at the inbox. */
export function BusinessSwitcher() {
  const session = useSignedIn();
  const { switchBusiness } = useSession();
  const navigate = useNavigate();
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);

  const change = async (event: ChangeEvent<HTMLSelectElement>) => {
    setPending(true);
    setError(undefined);
    try {
      await switchBusiness(event.target.value);
      await navigate('/');
    } catch (err) {
      setError(`The business could not be switched: ${(err as Error).message}.`);
    } finally {
      setPending(false);
    }
  };

  return (
    <div className={styles.switcher}>
      <label className="field">
        <span className="field-label">Business</span>
        <select value={session.business.id} onChange={(event) => void change(event)} disabled={pending}>
          {session.businesses.map((business) => (
            <option key={business.id} value={business.id}>
              {business.name}
            </option>
          ))}
        </select>
      </label>
      {error && (
        <p className={styles.switchError} role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

import { useState, type FormEvent } from 'react';
import { useParams } from 'react-router';
import { api, errorMessage } from '../api/client';
import { useDocumentTitle } from '../shell/document-title';
import { AuthCard } from './auth-card';

/**
 * Where an invitation link lands: the person chooses their password (and may correct their name) and
 * is signed in. The page loads the dashboard again, so the session is read as at any start.
 */
export function InvitationPage() {
  useDocumentTitle('Join your team');
  const { token = '' } = useParams();
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setPending(true);
    setError(undefined);
    try {
      const {
        data,
        error: failure,
        response,
      } = await api.POST('/dashboard/api/invitations/accept', {
        body: { token, password, ...(name ? { name } : {}) },
      });
      if (data) return window.location.assign('/dashboard/');
      setError(
        response.status === 404 || response.status === 410
          ? 'This invitation link is not valid any more: ask for a new one.'
          : errorMessage(failure, response),
      );
    } catch {
      setError(errorMessage(undefined));
    }
    setPending(false);
  };

  return (
    <AuthCard
      title="Join your team"
      lead="Choose a password to sign in with."
      error={error}
      pending={pending}
      submit="Set password and sign in"
      onSubmit={submit}
    >
      <label className="field">
        <span className="field-label">Your name (optional)</span>
        <input name="name" autoComplete="name" maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <div className="field">
        <label className="field-label" htmlFor="invitation-password">
          Password
        </label>
        <input
          id="invitation-password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          minLength={8}
          maxLength={200}
          value={password}
          onChange={(event) => setPassword(event.target.value)}
          aria-describedby="invitation-password-hint"
        />
        <span id="invitation-password-hint">At least 8 characters.</span>
      </div>
    </AuthCard>
  );
}

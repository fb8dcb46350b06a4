import { useState, type FormEvent } from 'react';
import { Navigate, useLocation, useNavigate, type Location } from 'react-router';
import { useSession } from '../session/session';
import { useDocumentTitle } from '../shell/document-title';
import { Loading } from '../shell/loading';
import { AuthCard } from './auth-card';

/** Where the visitor was sent from (RequireSession), to go back there once signed in. */
function returnPath(state: unknown): string {
  const from = (state as { from?: Location } | null)?.from;
  return from && from.pathname !== '/login' ? `${from.pathname}${from.search}${from.hash}` : '/';
}

export function LoginPage() {
  useDocumentTitle('Sign in');
  const { session, signIn } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);

  if (session === undefined) return <Loading />;
  if (session) return <Navigate to={returnPath(location.state)} replace />;

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setPending(true);
    setError(undefined);
    const result = await signIn(email, password);
    setPending(false);
    if (result.ok) await navigate(returnPath(location.state), { replace: true });
    else setError(result.message);
  };

  return (
    <AuthCard
      title="Sign in"
      lead="Sign in to your team’s inbox."
      error={error}
      pending={pending}
      submit="Sign in"
      onSubmit={submit}
    >
      <label className="field">
        <span className="field-label">Email</span>
        <input
          name="email"
          type="email"
          autoComplete="username"
          required
          autoFocus
          value={email}
          onChange={(event) => setEmail(event.target.value)}
        />
      </label>
      <label className="field">
        <span className="field-label">Password</span>
        <input
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
      </label>
    </AuthCard>
  );
}

// Who is signed in, for which business, held for every page: read once at load, replaced by sign-in,
// a switch of business and sign-out, and dropped when any call answers 401.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { api, errorMessage, setCsrfToken, setUnauthorizedHandler } from '../api/client';
import type { paths } from '../api/schema';

export type Session = paths['/dashboard/api/session']['get']['responses'][200]['content']['application/json'];
export type Role = Session['user']['role'];

export type SignInResult =
  | { ok: true }
  | { ok: false; reason: 'invalid_credentials' | 'locked_out' | 'failed'; message: string; retryAfterSeconds?: number };

interface SessionState {
  /** undefined while the first read is under way, null when nobody is signed in. */
  session: Session | null | undefined;
  signIn(email: string, password: string): Promise<SignInResult>;
  signOut(): Promise<void>;
  switchBusiness(businessId: string): Promise<void>;
}

const SessionContext = createContext<SessionState | undefined>(undefined);

export function canManage(role: Role): boolean {
  return role === 'owner' || role === 'admin';
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null | undefined>(undefined);

  const take = useCallback((next: Session | null) => {
    setCsrfToken(next?.csrf_token);
    setSession(next);
  }, []);

  useEffect(() => {
    setUnauthorizedHandler(() => take(null));
    let current = true;
    api
      .GET('/dashboard/api/session')
      .then(({ data }) => current && take(data ?? null))
      .catch(() => current && take(null));
    return () => {
      current = false;
    };
  }, [take]);

  const signIn = useCallback(
    async (email: string, password: string): Promise<SignInResult> => {
      try {
        const { data, error, response } = await api.POST('/dashboard/api/session', { body: { email, password } });
        if (data) {
          take(data);
          return { ok: true };
        }
        if (response.status === 401)
          return { ok: false, reason: 'invalid_credentials', message: 'The email or password is incorrect.' };
        if (response.status === 429) {
          const retryAfterSeconds = Number(response.headers.get('retry-after')) || undefined;
          return { ok: false, reason: 'locked_out', message: lockedOutMessage(retryAfterSeconds), retryAfterSeconds };
        }
        return { ok: false, reason: 'failed', message: `Sign-in failed: ${errorMessage(error, response)}.` };
      } catch {
        return { ok: false, reason: 'failed', message: 'Sign-in failed: the service could not be reached.' };
      }
    },
    [take],
  );

  const signOut = useCallback(async () => {
    // The session view ends whatever the answer: a session that is already gone is signed out too.
    await api.DELETE('/dashboard/api/session').catch(() => undefined);
    take(null);
  }, [take]);

  const switchBusiness = useCallback(
    async (businessId: string) => {
      const { data, error, response } = await api.PUT('/dashboard/api/session/business', {
        body: { business_id: businessId },
      });
      if (!data) throw new Error(errorMessage(error, response));
      take(data);
    },
    [take],
  );

  const value = useMemo(
    () => ({ session, signIn, signOut, switchBusiness }),
    [session, signIn, signOut, switchBusiness],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession is used outside SessionProvider');
  return state;
}

/** The signed-in session, for pages that only render inside the signed-in shell. */
export function useSignedIn(): Session {
  const { session } = useSession();
  if (!session) throw new Error('useSignedIn is used outside the signed-in shell');
  return session;
}

function lockedOutMessage(seconds: number | undefined): string {
  if (!seconds) return 'Too many failed attempts. You are locked out for now: try again later.';
  const minutes = Math.ceil(seconds / 60);
  return `Too many failed attempts. You are locked out: try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

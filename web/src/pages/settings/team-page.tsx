import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client';
import type { paths } from '../../api/schema';
import { useSignedIn, type Role } from '../../session/session';
import { useDocumentTitle } from '../../shell/document-title';
import page from '../page.module.css';
import { CopyField, ErrorNote, Field, useLoaded } from './settings-kit';
import styles from './settings.module.css';

type User = paths['/dashboard/api/users']['get']['responses'][200]['content']['application/json']['users'][number];
type Team = paths['/dashboard/api/teams']['get']['responses'][200]['content']['application/json']['teams'][number];

const ROLES: Role[] = ['agent', 'admin', 'owner'];
const roleName = (role: Role) => role.charAt(0).toUpperCase() + role.slice(1);

/** The people who use the dashboard (invited, given a role, removed) and the teams they form. */
export function TeamPage() {
  useDocumentTitle('Team');
  const session = useSignedIn();
  const users = useLoaded(() => api.GET('/dashboard/api/users'));
  const teams = useLoaded(() => api.GET('/dashboard/api/teams'));
  const [error, setError] = useState<string>();
  const owner = session.user.role === 'owner';
  // Only an owner makes an owner or changes one (the service refuses it to an admin too).
  const roles = owner ? ROLES : ROLES.filter((role) => role !== 'owner');

  const changeRole = async (user: User, role: Role) => {
    setError(undefined);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/dashboard/api/users/{id}', {
      params: { path: { id: user.id } },
      body: { role },
    });
    if (!data) setError(errorMessage(failure, response));
    await users.reload();
  };

  const remove = async (user: User) => {
    if (!window.confirm(`Remove ${user.name}? They will no longer be able to sign in.`)) return;
    setError(undefined);
    const { error: failure, response } = await api.DELETE('/dashboard/api/users/{id}', {
      params: { path: { id: user.id } },
    });
    if (!response.ok) setError(errorMessage(failure, response));
    await Promise.all([users.reload(), teams.reload()]);
  };

  return (
    <div className={page.page}>
      <h1>Team</h1>
      <p className={page.lead}>The people who use this dashboard.</p>

      <section className={styles.section} aria-labelledby="users-heading">
        <h2 id="users-heading">Users</h2>
        <ErrorNote message={users.error ?? error} />
        {users.data && (
          <table className={styles.table}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">
                  <span className={styles.visuallyHidden}>Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.data.users.map((user) => {
                const locked = user.role === 'owner' && !owner;
                return (
                  <tr key={user.id}>
                    <td>{user.name}</td>
                    <td>{user.email}</td>
                    <td>
                      {locked ? (
                        roleName(user.role)
                      ) : (
                        <select
                          aria-label={`Role of ${user.name}`}
                          value={user.role}
                          onChange={(event) => void changeRole(user, event.target.value as Role)}
                        >
                          {roles.map((role) => (
                            <option key={role} value={role}>
                              {roleName(role)}
                            </option>
                          ))}
                        </select>
                      )}
                    </td>
                    <td>
                      {!locked && user.id !== session.user.id && (
                        <button type="button" className={`button ${styles.danger}`} onClick={() => void remove(user)}>
                          Remove<span className={styles.visuallyHidden}> {user.name}</span>
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>

      <InviteForm roles={roles} onInvited={users.reload} />

      <section className={styles.section} aria-labelledby="teams-heading">
        <h2 id="teams-heading">Teams</h2>
        <ErrorNote message={teams.error} />
        {teams.data?.teams.length === 0 && <p className={styles.empty}>No team yet.</p>}
        {teams.data?.teams.map((team) => (
          <TeamCard key={team.id} team={team} users={users.data?.users ?? []} onChanged={teams.reload} />
        ))}
        <NewTeamForm onCreated={teams.reload} />
      </section>
    </div>
  );
}

function InviteForm({ roles, onInvited }: { roles: Role[]; onInvited: () => Promise<void> }) {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('agent');
  const [link, setLink] = useState<string>();
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setError(undefined);
    setLink(undefined);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/dashboard/api/users', {
      body: { email, name, role },
    });
    setPending(false);
    if (!data) return setError(errorMessage(failure, response));
    setLink(data.invitation?.url);
    setEmail('');
    setName('');
    await onInvited();
  };

  return (
    <section className={styles.section} aria-labelledby="invite-heading">
      <h2 id="invite-heading">Invite a user</h2>
      <form className={`${styles.form} ${styles.card}`} onSubmit={(event) => void submit(event)}>
        <div className={styles.row}>
          <Field label="Email">
            {(props) => (
              <input
                {...props}
                type="email"
                required
                value={email}
                onChange={(event) => setEmail(event.target.value)}
              />
            )}
          </Field>
          <Field label="Name">
            {(props) => (
              <input
                {...props}
                required
                maxLength={200}
                value={name}
                onChange={(event) => setName(event.target.value)}
              />
            )}
          </Field>
          <Field label="Role">
            {(props) => (
              <select {...props} value={role} onChange={(event) => setRole(event.target.value as Role)}>
                {roles.map((option) => (
                  <option key={option} value={option}>
                    {roleName(option)}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <ErrorNote message={error} />
        <div>
          <button type="submit" className="button button-primary" disabled={pending} aria-busy={pending}>
            Invite
          </button>
        </div>
        {link && (
          <div className={styles.result} role="status">
            <p className={styles.hint}>Send this link to the person: it is shown only now.</p>
            <CopyField label="Invitation link" value={link} />
          </div>
        )}
      </form>
    </section>
  );
}

function NewTeamForm({ onCreated }: { onCreated: () => Promise<void> }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<string>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    const { data, error: failure, response } = await api.POST('/dashboard/api/teams', { body: { name } });
    if (!data) return setError(errorMessage(failure, response));
    setName('');
    await onCreated();
  };
  return (
    <form className={styles.row} onSubmit={(event) => void submit(event)}>
      <label className="field">
        <span className="field-label">New team name</span>
        <input required maxLength={200} value={name} onChange={(event) => setName(event.target.value)} />
      </label>
      <button type="submit" className="button">
        Create team
      </button>
      <ErrorNote message={error} />
    </form>
  );
}

function TeamCard({ team, users, onChanged }: { team: Team; users: User[]; onChanged: () => Promise<void> }) {
  const [name, setName] = useState(team.name);
  const [members, setMembers] = useState(new Set(team.member_ids));
  const [error, setError] = useState<string>();
  const [saved, setSaved] = useState(false);
  const path = { params: { path: { id: team.id } } };

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setSaved(false);
    if (name !== team.name) {
      const renamed = await api.PATCH('/dashboard/api/teams/{id}', { ...path, body: { name } });
      if (!renamed.data) return setError(errorMessage(renamed.error, renamed.response));
    }
    const set = await api.PUT('/dashboard/api/teams/{id}/members', { ...path, body: { user_ids: [...members] } });
    if (!set.data) return setError(errorMessage(set.error, set.response));
    setSaved(true);
    await onChanged();
  };

  const remove = async () => {
    if (!window.confirm(`Delete the team ${team.name}?`)) return;
    const { response, error: failure } = await api.DELETE('/dashboard/api/teams/{id}', path);
    if (!response.ok) return setError(errorMessage(failure, response));
    await onChanged();
  };

  const toggle = (id: string, on: boolean) =>
    setMembers((current) => {
      const next = new Set(current);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  return (
    <form className={`${styles.form} ${styles.card} ${styles.section}`} onSubmit={(event) => void save(event)}>
      <label className="field">
        <span className="field-label">Team name</span>
        <input required maxLength={200} value={name} onChange={(event) => setName(event.target.value)} />
      </label>
      <fieldset className={styles.members}>
        <legend>Members of {team.name}</legend>
        {users.map((user) => (
          <label key={user.id}>
            <input
              type="checkbox"
              checked={members.has(user.id)}
              onChange={(event) => toggle(user.id, event.target.checked)}
            />
            {user.name}
          </label>
        ))}
      </fieldset>
      <ErrorNote message={error} />
      <div className={styles.inline}>
        <button type="submit" className="button button-primary">
          Save {team.name}
        </button>
        <button type="button" className={`button ${styles.danger}`} onClick={() => void remove()}>
          Delete {team.name}
        </button>
        {saved && <span role="status">Saved</span>}
      </div>
    </form>
  );
}

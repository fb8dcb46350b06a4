import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client';
import type { paths } from '../../api/schema';
import { useSignedIn, type Role } from '../../session/session';
import { useLoad } from '../../api/use-load';
import { ConfirmDialog } from '../../shell/dialog';
import { ErrorNote } from '../../shell/error-note';
import { CopyField, Field, SettingsPage, SettingsSection, SettingsTable } from './settings-kit';
import styles from './settings.module.css';

type User = paths['/dashboard/api/users']['get']['responses'][200]['content']['application/json']['users'][number];
type Invitation =
  paths['/dashboard/api/invitations']['get']['responses'][200]['content']['application/json']['invitations'][number];
type Team = paths['/dashboard/api/teams']['get']['responses'][200]['content']['application/json']['teams'][number];

const ROLES: Role[] = ['agent', 'admin', 'owner'];
const roleName = (role: Role) => role.charAt(0).toUpperCase() + role.slice(1);

/** The people who use the dashboard (invited, given a role, removed) and the teams they form. */
export function TeamPage() {
  const session = useSignedIn();
  const users = useLoad(() => api.GET('/dashboard/api/users'));
  const teams = useLoad(() => api.GET('/dashboard/api/teams'));
  const invitations = useLoad(() => api.GET('/dashboard/api/invitations'));
  const pending = new Map(invitations.data?.invitations.map((invitation) => [invitation.user_id, invitation]));
  const [error, setError] = useState<string>();
  const [resent, setResent] = useState<{ name: string; url: string }>();
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
    <SettingsPage title="Team" lead="The people who use this dashboard.">
      <SettingsSection title="Users">
        <SettingsTable
          columns={['Name', 'Email', 'Role']}
          actions
          rows={users.data?.users}
          error={users.error ?? error}
          empty="No user yet."
          rowKey={(user) => user.id}
        >
          {(user) => {
            const locked = user.role === 'owner' && !owner;
            const invitation = pending.get(user.id);
            return (
              <>
                <td>
                  {user.name}
                  {invitation && (
                    <div className={styles.hint}>
                      {invitation.open
                        ? `Invited: the link works until ${new Date(invitation.expires_at).toLocaleString()}`
                        : 'Invited: the link has expired or was withdrawn'}
                    </div>
                  )}
                </td>
                <td className={styles.long}>{user.email}</td>
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
                  <div className={styles.inline}>
                    {invitation && !locked && (
                      <InvitationActions
                        user={user}
                        invitation={invitation}
                        onSent={(url) => setResent({ name: user.name, url })}
                        onError={setError}
                        onChanged={invitations.reload}
                      />
                    )}
                    {!locked && user.id !== session.user.id && (
                      <button type="button" className={`button ${styles.danger}`} onClick={() => void remove(user)}>
                        Remove<span className="visually-hidden"> {user.name}</span>
                      </button>
                    )}
                  </div>
                </td>
              </>
            );
          }}
        </SettingsTable>
        {resent && (
          <div className={styles.result} role="status">
            <p className={styles.hint}>
              A new invitation for {resent.name}: the earlier link no longer works, and this one is shown only now.
            </p>
            <CopyField label={`Invitation link for ${resent.name}`} value={resent.url} />
          </div>
        )}
      </SettingsSection>

      <InviteForm
        roles={roles}
        onInvited={async () => {
          setResent(undefined);
          await Promise.all([users.reload(), invitations.reload()]);
        }}
      />

      <SettingsSection title="Teams">
        <ErrorNote message={teams.error} />
        {teams.data?.teams.length === 0 && <p className={styles.empty}>No team yet.</p>}
        {teams.data?.teams.map((team) => (
          <TeamCard key={team.id} team={team} users={users.data?.users ?? []} onChanged={teams.reload} />
        ))}
        <NewTeamForm onCreated={teams.reload} />
      </SettingsSection>
    </SettingsPage>
  );
}

/**
 * What an admin does with the invitation of a user who has not joined: send it again (a new link, the
 * earlier one stops working) or, while its link works, withdraw it.
 */
function InvitationActions({
  user,
  invitation,
  onSent,
  onError,
  onChanged,
}: {
  user: User;
  invitation: Invitation;
  onSent: (url: string) => void;
  onError: (message?: string) => void;
  onChanged: () => Promise<void>;
}) {
  const [pending, setPending] = useState(false);
  const path = { params: { path: { id: invitation.id } } };

  const resend = async () => {
    setPending(true);
    onError(undefined);
    const { data, error: failure, response } = await api.POST('/dashboard/api/invitations/{id}/resend', path);
    setPending(false);
    if (!data) return onError(errorMessage(failure, response));
    onSent(data.invitation.url);
    await onChanged();
  };

  const withdraw = async () => {
    const { error: failure, response } = await api.DELETE('/dashboard/api/invitations/{id}', path);
    if (!response.ok) return errorMessage(failure, response);
    await onChanged();
  };

  return (
    <>
      <button type="button" className="button" disabled={pending} aria-busy={pending} onClick={() => void resend()}>
        Resend<span className="visually-hidden"> invitation to {user.name}</span>
      </button>
      {invitation.open && (
        <ConfirmDialog
          label={
            <>
              Withdraw<span className="visually-hidden"> invitation of {user.name}</span>
            </>
          }
          title={`Withdraw the invitation of ${user.name}?`}
          action="Withdraw invitation"
          onConfirm={withdraw}
        >
          <p>
            The link sent to {user.email} stops working. {user.name} stays in the list: you can send a new invitation or
            remove them.
          </p>
        </ConfirmDialog>
      )}
    </>
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
    <SettingsSection title="Invite a user">
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
    </SettingsSection>
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

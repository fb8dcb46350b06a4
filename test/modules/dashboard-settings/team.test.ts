import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { createUser, postSignIn, signIn } from '../dashboard-auth/dashboard-helpers.ts';
import { call, refused, settingsFixture, type SettingsFixture } from './settings-fixture.ts';

let f: SettingsFixture;
beforeAll(async () => {
  f = await settingsFixture();
});
afterAll(() => f.t.close());

const roleOf = async (id: string) =>
  (await call(f.t.app, f.owner, 'GET', '/users')).json().users.find((u: { id: string }) => u.id === id)?.role;

describe('users', () => {
  it('invites a user with a role and answers the link to copy', async () => {
    const res = await call(f.t.app, f.admin, 'POST', '/users', { email: 'new@acme.test', name: 'New', role: 'agent' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().invitation.url).toMatch(/^http:\/\/dashboard\.test\/dashboard\/invitations\/\S+$/);
    await refused(
      call(f.t.app, f.admin, 'POST', '/users', { email: 'boss@acme.test', name: 'Boss', role: 'owner' }),
      403,
      'forbidden',
    );
    await refused(
      call(f.t.app, f.admin, 'POST', '/users', { email: 'x@acme.test', name: 'X', extra: 1 }),
      400,
      'validation_error',
    );
  });

  it('changes roles: an admin promotes and demotes admins and agents, only an owner touches owners', async () => {
    const carol = (await createUser(f.t.app, f.businessId, { email: 'carol@acme.test', password: 'correct horse' })).id;
    const carolBrowser = await signIn(f.t.app, 'carol@acme.test', 'correct horse');
    await refused(call(f.t.app, carolBrowser, 'GET', '/templates'), 403, 'forbidden');

    const promoted = await call(f.t.app, f.admin, 'PATCH', `/users/${carol}`, { role: 'admin' });
    expect(promoted.statusCode, promoted.body).toBe(200);
    expect(promoted.json().user).toMatchObject({ id: carol, role: 'admin' });
    // The role applies to the next request of her session.
    expect((await call(f.t.app, carolBrowser, 'GET', '/templates')).statusCode).toBe(200);

    await refused(call(f.t.app, f.admin, 'PATCH', `/users/${carol}`, { role: 'owner' }), 403, 'forbidden');
    await refused(call(f.t.app, f.admin, 'PATCH', `/users/${f.users.owner}`, { role: 'admin' }), 403, 'forbidden');
    await refused(call(f.t.app, f.admin, 'DELETE', `/users/${f.users.owner}`), 403, 'forbidden');
    expect(await roleOf(f.users.owner)).toBe('owner');

    const made = await call(f.t.app, f.owner, 'PATCH', `/users/${carol}`, { role: 'owner' });
    expect(made.json().user.role).toBe('owner');
    const back = await call(f.t.app, f.owner, 'PATCH', `/users/${carol}`, { role: 'agent' });
    expect(back.json().user.role).toBe('agent');
  });

  it('keeps the last owner: not demoted, not removed, even by themselves', async () => {
    await refused(call(f.t.app, f.owner, 'PATCH', `/users/${f.users.owner}`, { role: 'admin' }), 409, 'last_owner');
    await refused(call(f.t.app, f.owner, 'DELETE', `/users/${f.users.owner}`), 409, 'last_owner');
    expect(await roleOf(f.users.owner)).toBe('owner');
  });

  it('removes a user: their session ends and they leave their teams', async () => {
    const dan = (await createUser(f.t.app, f.businessId, { email: 'dan@acme.test', password: 'correct horse' })).id;
    const danBrowser = await signIn(f.t.app, 'dan@acme.test', 'correct horse');
    const { team } = (await call(f.t.app, f.admin, 'POST', '/teams', { name: 'Night shift' })).json();
    await call(f.t.app, f.admin, 'PUT', `/teams/${team.id}/members`, { user_ids: [dan, f.users.agent] });

    expect((await call(f.t.app, f.admin, 'DELETE', `/users/${dan}`)).statusCode).toBe(204);
    await refused(call(f.t.app, danBrowser, 'GET', '/session'), 401, 'unauthorized');
    expect((await postSignIn(f.t.app, { email: 'dan@acme.test', password: 'correct horse' })).statusCode).toBe(401);
    const teams = (await call(f.t.app, f.admin, 'GET', '/teams')).json().teams;
    expect(teams.find((x: { id: string }) => x.id === team.id).member_ids).toEqual([f.users.agent]);
    await refused(call(f.t.app, f.admin, 'DELETE', `/users/${dan}`), 404, 'not_found');
  });

  it('refuses bad input, another business’s users (404) and agents (403)', async () => {
    await refused(
      call(f.t.app, f.admin, 'PATCH', `/users/${f.users.agent}`, { role: 'king' }),
      400,
      'validation_error',
    );
    await refused(
      call(f.t.app, f.admin, 'PATCH', `/users/${f.users.agent}`, { name: 'Renamed' }),
      400,
      'validation_error',
    );
    await refused(call(f.t.app, f.admin, 'PATCH', `/users/nope`, { role: 'agent' }), 400, 'validation_error');
    await refused(call(f.t.app, f.otherOwner, 'PATCH', `/users/${f.users.agent}`, { role: 'admin' }), 404, 'not_found');
    await refused(call(f.t.app, f.otherOwner, 'DELETE', `/users/${f.users.agent}`), 404, 'not_found');
    await refused(call(f.t.app, f.agent, 'PATCH', `/users/${f.users.agent}`, { role: 'admin' }), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'DELETE', `/users/${f.users.admin}`), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'POST', '/users', { email: 'y@acme.test', name: 'Y' }), 403, 'forbidden');
    expect(await roleOf(f.users.agent)).toBe('agent');
  });
});

describe('teams', () => {
  it('creates, renames, sets members and deletes a team', async () => {
    const created = await call(f.t.app, f.admin, 'POST', '/teams', { name: 'Support' });
    expect(created.statusCode, created.body).toBe(201);
    const { team } = created.json();
    expect(team).toEqual({ id: expect.any(String), name: 'Support', member_ids: [] });

    const renamed = await call(f.t.app, f.admin, 'PATCH', `/teams/${team.id}`, { name: 'Customer care' });
    expect(renamed.json().team).toEqual({ id: team.id, name: 'Customer care' });

    const members = await call(f.t.app, f.admin, 'PUT', `/teams/${team.id}/members`, {
      user_ids: [f.users.agent, f.users.admin, f.users.agent],
    });
    expect(members.statusCode, members.body).toBe(200);
    expect([...members.json().team.member_ids].sort()).toEqual([f.users.agent, f.users.admin].sort());
    const fewer = await call(f.t.app, f.admin, 'PUT', `/teams/${team.id}/members`, { user_ids: [f.users.admin] });
    expect(fewer.json().team.member_ids).toEqual([f.users.admin]);

    // Everyone in the business sees the teams (assignment); only admins change them.
    const seen = await call(f.t.app, f.agent, 'GET', '/teams');
    expect(seen.json().teams).toContainEqual({ id: team.id, name: 'Customer care', member_ids: [f.users.admin] });

    expect((await call(f.t.app, f.owner, 'DELETE', `/teams/${team.id}`)).statusCode).toBe(204);
    await refused(call(f.t.app, f.owner, 'DELETE', `/teams/${team.id}`), 404, 'not_found');
  });

  it('refuses members who are not users of the business, bad input and agents', async () => {
    const { team } = (await call(f.t.app, f.admin, 'POST', '/teams', { name: 'Sales' })).json();
    const theirs = (await call(f.t.app, f.otherOwner, 'GET', '/users')).json().users[0].id;
    const res = await call(f.t.app, f.admin, 'PUT', `/teams/${team.id}/members`, { user_ids: [f.users.agent, theirs] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_error', details: [{ path: '/user_ids/1' }] });
    await refused(
      call(f.t.app, f.admin, 'PUT', `/teams/${team.id}/members`, { user_ids: [newId()] }),
      400,
      'validation_error',
    );
    await refused(
      call(f.t.app, f.admin, 'PUT', `/teams/${team.id}/members`, { user_ids: ['x'] }),
      400,
      'validation_error',
    );
    await refused(call(f.t.app, f.admin, 'POST', '/teams', { name: '' }), 400, 'validation_error');
    await refused(call(f.t.app, f.admin, 'POST', '/teams', { name: 'A', extra: 1 }), 400, 'validation_error');

    await refused(call(f.t.app, f.otherOwner, 'PATCH', `/teams/${team.id}`, { name: 'Mine' }), 404, 'not_found');
    await refused(call(f.t.app, f.otherOwner, 'PUT', `/teams/${team.id}/members`, { user_ids: [] }), 404, 'not_found');
    await refused(call(f.t.app, f.otherOwner, 'DELETE', `/teams/${team.id}`), 404, 'not_found');
    expect((await call(f.t.app, f.otherOwner, 'GET', '/teams')).body).not.toContain(team.id);

    await refused(call(f.t.app, f.agent, 'POST', '/teams', { name: 'Mine' }), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'PATCH', `/teams/${team.id}`, { name: 'Mine' }), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'PUT', `/teams/${team.id}/members`, { user_ids: [] }), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'DELETE', `/teams/${team.id}`), 403, 'forbidden');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { invitationsRepository } from '../../../src/modules/dashboard-auth/invitations.repository.ts';
import { tokenDigest } from '../../../src/modules/dashboard-auth/tokens.ts';
import { usersRepository } from '../../../src/modules/users/users.repository.ts';
import { newId } from '../../../src/lib/ids.ts';
import { engine } from '../../helpers/test-app.ts';
import { createUser, postSignIn, sessionCookie } from '../dashboard-auth/dashboard-helpers.ts';
import { call, refused, settingsFixture, type SettingsFixture } from './settings-fixture.ts';

let f: SettingsFixture;
beforeAll(async () => {
  f = await settingsFixture();
});
afterAll(() => f.t.close());

const tokenOf = (url: string) => url.split('/').pop()!;
const accept = (url: string, password = 'chosen password') =>
  f.t.app.inject({
    method: 'POST',
    url: '/dashboard/api/invitations/accept',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ token: tokenOf(url), password }),
  });

interface Pending {
  id: string;
  user_id: string;
  open: boolean;
  expires_at: string;
}
const pending = async (): Promise<Pending[]> => {
  const res = await call(f.t.app, f.admin, 'GET', '/invitations');
  expect(res.statusCode, res.body).toBe(200);
  return res.json().invitations;
};
const pendingOf = async (userId: string) => (await pending()).find((i) => i.user_id === userId);

/** A user invited from the team page: their id and link. */
async function invite(email: string, role = 'agent') {
  const res = await call(f.t.app, f.owner, 'POST', '/users', { email, name: email.split('@')[0], role });
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().user.id as string, url: res.json().invitation.url as string };
}

describe('invitations on the team page', () => {
  it('lists the invitation of a user who has not joined, and no longer once they have', async () => {
    const { id, url } = await invite('lena@acme.test');
    const invitation = await pendingOf(id);
    expect(invitation).toMatchObject({ user_id: id, open: true });
    // The users with a password have no pending invitation.
    expect((await pending()).map((i) => i.user_id)).not.toContain(f.users.agent);

    expect((await accept(url)).statusCode).toBe(200);
    expect(await pendingOf(id)).toBeUndefined();
    await refused(call(f.t.app, f.admin, 'POST', `/invitations/${invitation!.id}/resend`), 409, 'invitation_used');
    await refused(call(f.t.app, f.admin, 'DELETE', `/invitations/${invitation!.id}`), 409, 'invitation_used');
  });

  it('sends an invitation again: a new link that works, and the old one no longer does', async () => {
    const { id, url: first } = await invite('mia@acme.test');
    const before = await pendingOf(id);
    const res = await call(f.t.app, f.admin, 'POST', `/invitations/${before!.id}/resend`);
    expect(res.statusCode, res.body).toBe(200);
    const second = res.json().invitation.url as string;
    expect(second).toMatch(/^http:\/\/dashboard\.test\/dashboard\/invitations\/\S+$/);
    expect(second).not.toBe(first);
    expect(Date.parse(res.json().invitation.expires_at)).toBeGreaterThan(Date.now());

    const after = await pendingOf(id);
    expect(after).toMatchObject({ open: true });
    expect(after!.id).not.toBe(before!.id);

    const old = await accept(first);
    expect(old.statusCode).toBe(410);
    expect(old.json().error.code).toBe('invitation_expired');
    const joined = await accept(second, 'her own password');
    expect(joined.statusCode, joined.body).toBe(200);
    expect(sessionCookie(joined)).toBeDefined();
    expect((await postSignIn(f.t.app, { email: 'mia@acme.test', password: 'her own password' })).statusCode).toBe(200);
  });

  it('withdraws an invitation: its link stops working, the user stays and may be sent a new one', async () => {
    const { id, url } = await invite('noor@acme.test');
    const invitation = await pendingOf(id);
    const res = await call(f.t.app, f.admin, 'DELETE', `/invitations/${invitation!.id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(await pendingOf(id)).toMatchObject({ id: invitation!.id, open: false });
    expect((await accept(url)).statusCode).toBe(410);
    const users = (await call(f.t.app, f.admin, 'GET', '/users')).json().users;
    expect(users.map((u: { id: string }) => u.id)).toContain(id);
    // Withdrawing again changes nothing.
    expect((await call(f.t.app, f.admin, 'DELETE', `/invitations/${invitation!.id}`)).statusCode).toBe(204);

    const sent = await call(f.t.app, f.admin, 'POST', `/invitations/${invitation!.id}/resend`);
    expect(sent.statusCode, sent.body).toBe(200);
    expect(await pendingOf(id)).toMatchObject({ open: true });
    expect((await accept(sent.json().invitation.url)).statusCode).toBe(200);
  });

  it("leaves an owner's invitation to owners", async () => {
    const { id } = await invite('olga@acme.test', 'owner');
    const invitation = await pendingOf(id);
    await refused(call(f.t.app, f.admin, 'POST', `/invitations/${invitation!.id}/resend`), 403, 'forbidden');
    await refused(call(f.t.app, f.admin, 'DELETE', `/invitations/${invitation!.id}`), 403, 'forbidden');
    expect(await pendingOf(id)).toMatchObject({ id: invitation!.id, open: true });
    expect((await call(f.t.app, f.owner, 'POST', `/invitations/${invitation!.id}/resend`)).statusCode).toBe(200);
  });

  it("answers 404 for another business's invitation or a removed user's, 400 for a bad id, 403 to agents", async () => {
    const { id } = await invite('pia@acme.test');
    const invitation = await pendingOf(id);
    const path = `/invitations/${invitation!.id}`;

    await refused(call(f.t.app, f.otherOwner, 'POST', `${path}/resend`), 404, 'not_found');
    await refused(call(f.t.app, f.otherOwner, 'DELETE', path), 404, 'not_found');
    expect((await call(f.t.app, f.otherOwner, 'GET', '/invitations')).json().invitations).toEqual([]);
    await refused(call(f.t.app, f.admin, 'POST', `/invitations/${newId()}/resend`), 404, 'not_found');
    await refused(call(f.t.app, f.admin, 'POST', '/invitations/nope/resend'), 400, 'validation_error');
    await refused(call(f.t.app, f.admin, 'DELETE', '/invitations/nope'), 400, 'validation_error');
    await refused(call(f.t.app, f.agent, 'GET', '/invitations'), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'POST', `${path}/resend`), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'DELETE', path), 403, 'forbidden');
    await refused(
      call(f.t.app, f.admin, 'POST', `${path}/resend`, undefined, { 'x-csrf-token': 'wrong' }),
      403,
      'csrf_failed',
    );
    expect(await pendingOf(id)).toMatchObject({ id: invitation!.id, open: true });

    expect((await call(f.t.app, f.admin, 'DELETE', `/users/${id}`)).statusCode).toBe(204);
    await refused(call(f.t.app, f.admin, 'POST', `${path}/resend`), 404, 'not_found');
    await refused(call(f.t.app, f.admin, 'DELETE', path), 404, 'not_found');
    expect(await pendingOf(id)).toBeUndefined();
  });

  it.runIf(engine === 'postgres')(
    'sends no new link for a user whose acceptance commits while the invitation is sent again',
    async () => {
      const { id, url } = await invite('rhea@acme.test');
      const invitation = await pendingOf(id);
      let resend: Promise<LightMyRequestResponse> | undefined;
      // An acceptance holds its claim while it sets the password; the resend waits for it, then sees her joined.
      await f.t.database.db.transaction().execute(async (trx) => {
        const claimed = await invitationsRepository.claim(trx, tokenDigest(tokenOf(url)), new Date().toISOString());
        expect(claimed).toBeDefined();
        await usersRepository.setPasswordHash(trx, [{ business_id: f.businessId, id }], 'a hash');
        resend = call(f.t.app, f.admin, 'POST', `/invitations/${invitation!.id}/resend`);
        await new Promise((resolve) => setTimeout(resolve, 300));
      });
      await refused(resend!, 409, 'invitation_used');
      const open = await f.t.database.db
        .selectFrom('dashboard_invitations')
        .select('id')
        .where('user_id', '=', id)
        .where('accepted_at', 'is', null)
        .where('expires_at', '>', new Date().toISOString())
        .execute();
      expect(open).toEqual([]);
    },
  );

  it('lists the user made without a password and invited by the operator too', async () => {
    const { id } = await createUser(f.t.app, f.businessId, { email: 'quinn@acme.test', invite: true });
    expect(await pendingOf(id)).toMatchObject({ open: true });
  });
});

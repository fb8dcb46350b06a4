import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usersRepository } from '../../../src/modules/users/users.repository.ts';
import { insertContact, insertConversation } from '../../helpers/factories.ts';
import { engine } from '../../helpers/test-app.ts';
import { adminHeaders, createTenant } from '../../helpers/tenants.ts';
import { createUser } from '../dashboard-auth/dashboard-helpers.ts';
import { call, settingsFixture, type SettingsFixture } from './settings-fixture.ts';

// A user removed from the business (dashboard and operator API) or a team deleted leaves no
// conversation or contact assigned to them, with the domain events that update open dashboards.

let f: SettingsFixture;
beforeAll(async () => {
  f = await settingsFixture();
});
afterAll(() => f.t.close());

const db = () => f.t.database.db;
let serial = 0;
const newUser = async () =>
  (await createUser(f.t.app, f.businessId, { email: `leaving-${++serial}@acme.test`, password: 'pw-leaving-1' })).id;
const newTeam = async (name: string) =>
  (await call(f.t.app, f.admin, 'POST', '/teams', { name })).json().team.id as string;

const conversationRow = (id: string) =>
  db()
    .selectFrom('conversations')
    .select(['assigned_user_id', 'team_id'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

const assignmentChanges = (conversationId: string) =>
  db()
    .selectFrom('domain_events')
    .select('data')
    .where('conversation_id', '=', conversationId)
    .where('type', '=', 'conversation_changed')
    .execute()
    .then((rows) => rows.map((r) => r.data));

const fieldEvents = (contactId: string) =>
  db()
    .selectFrom('events')
    .select(['type', 'actor_type', 'user_id', 'data'])
    .where('contact_id', '=', contactId)
    .where('type', '=', 'contact_field_changed')
    .execute();

const contactChanges = (contactId: string) =>
  db()
    .selectFrom('domain_events')
    .select('data')
    .where('subject_id', '=', contactId)
    .where('type', '=', 'contact_changed')
    .execute()
    .then((rows) => rows.map((r) => r.data));

/** Conversations and a contact assigned to `userId` (one closed, one with a team), and one of someone else. */
async function assignedTo(userId: string, teamId: string) {
  const contact = await insertContact(db(), f.businessId, { assigned_user_id: userId });
  const bystander = await insertContact(db(), f.businessId, { assigned_user_id: f.users.agent });
  return {
    contact,
    bystander,
    open: await insertConversation(db(), f.businessId, contact.id, { assigned_user_id: userId, team_id: teamId }),
    closed: await insertConversation(db(), f.businessId, contact.id, {
      assigned_user_id: userId,
      closed_at: new Date().toISOString(),
    }),
    theirs: await insertConversation(db(), f.businessId, bystander.id, {
      assigned_user_id: f.users.agent,
      team_id: teamId,
    }),
  };
}

describe('a removed user', () => {
  it('removed from the dashboard: their conversations and contacts are unassigned, by the remover', async () => {
    const leaving = await newUser();
    const team = await newTeam('Queue');
    const made = await assignedTo(leaving, team);

    const res = await call(f.t.app, f.admin, 'DELETE', `/users/${leaving}`);
    expect(res.statusCode, res.body).toBe(204);

    expect(await conversationRow(made.open.id)).toEqual({ assigned_user_id: null, team_id: team });
    expect(await conversationRow(made.closed.id)).toEqual({ assigned_user_id: null, team_id: null });
    expect(await conversationRow(made.theirs.id)).toEqual({ assigned_user_id: f.users.agent, team_id: team });
    for (const conversation of [made.open, made.closed])
      expect(await assignmentChanges(conversation.id)).toEqual([
        { change: 'assignment', actor_type: 'human', user_id: f.users.admin, reason: 'user_removed' },
      ]);
    expect(await assignmentChanges(made.theirs.id)).toEqual([]);

    const contact = await db()
      .selectFrom('contacts')
      .select(['id', 'assigned_user_id'])
      .where('id', 'in', [made.contact.id, made.bystander.id])
      .orderBy('id')
      .execute();
    expect(Object.fromEntries(contact.map((c) => [c.id, c.assigned_user_id]))).toEqual({
      [made.contact.id]: null,
      [made.bystander.id]: f.users.agent,
    });
    expect(await fieldEvents(made.contact.id)).toEqual([
      {
        type: 'contact_field_changed',
        actor_type: 'human',
        user_id: f.users.admin,
        data: {
          source: 'user_removed',
          changes: [{ field: 'assigned_user', custom: false, from: `leaving-${serial}@acme.test`, to: null }],
        },
      },
    ]);
    expect(await contactChanges(made.contact.id)).toEqual([
      { change: 'updated', source: 'user_removed', fields: ['assigned_user'] },
    ]);
    expect(await fieldEvents(made.bystander.id)).toEqual([]);
    // Handed over before the answer: the live stream's subscriber has nothing of it pending.
    const pending = await db()
      .selectFrom('domain_event_pending')
      .innerJoin('domain_events', 'domain_events.id', 'domain_event_pending.event_id')
      .select('domain_events.id')
      .where('domain_events.conversation_id', '=', made.open.id)
      .execute();
    expect(pending).toEqual([]);
  });

  it('removed through the operator API: the same, by the system', async () => {
    const leaving = await newUser();
    const team = await newTeam('Operators');
    const made = await assignedTo(leaving, team);
    const res = await f.t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${f.businessId}/users/${leaving}`,
      headers: adminHeaders,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await conversationRow(made.open.id)).toEqual({ assigned_user_id: null, team_id: team });
    expect(await conversationRow(made.theirs.id)).toEqual({ assigned_user_id: f.users.agent, team_id: team });
    expect(await assignmentChanges(made.closed.id)).toEqual([
      { change: 'assignment', actor_type: 'system', user_id: null, reason: 'user_removed' },
    ]);
    expect(await fieldEvents(made.contact.id)).toMatchObject([{ actor_type: 'system', user_id: null }]);
  });

  it('a refused removal (the last owner) unassigns nothing', async () => {
    const { businessId } = await createTenant(f.t.app, 'Alone');
    const owner = (await createUser(f.t.app, businessId, { email: 'only@alone.test', role: 'owner' })).id;
    const contact = await insertContact(db(), businessId, { assigned_user_id: owner });
    const conversation = await insertConversation(db(), businessId, contact.id, { assigned_user_id: owner });
    const res = await f.t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${businessId}/users/${owner}`,
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(409);
    expect((await conversationRow(conversation.id)).assigned_user_id).toBe(owner);
    expect(await assignmentChanges(conversation.id)).toEqual([]);
  });

  it.runIf(engine === 'postgres')(
    'an assignment committing during the removal is unassigned too: the removal waits for the held user',
    async () => {
      const leaving = await newUser();
      const contact = await insertContact(db(), f.businessId);
      const conversation = await insertConversation(db(), f.businessId, contact.id);
      let assigned!: () => void;
      const holding = new Promise<void>((resolve) => (assigned = resolve));
      let commit!: () => void;
      const release = new Promise<void>((resolve) => (commit = resolve));
      // An assignment's transaction, as ConversationOpsService.assign runs it: the user held, then the row written.
      const assignment = db()
        .transaction()
        .execute(async (trx) => {
          expect(await usersRepository.find(trx, f.businessId, leaving, true)).toBeDefined();
          await trx
            .updateTable('conversations')
            .set({ assigned_user_id: leaving })
            .where('business_id', '=', f.businessId)
            .where('id', '=', conversation.id)
            .execute();
          assigned();
          await release;
        });
      await holding;
      const removal = call(f.t.app, f.owner, 'DELETE', `/users/${leaving}`);
      // The removal waits on the held row; let it reach that point, then commit the assignment.
      await new Promise((resolve) => setTimeout(resolve, 300));
      commit();
      await assignment;
      expect((await removal).statusCode).toBe(204);
      expect((await conversationRow(conversation.id)).assigned_user_id).toBeNull();
    },
  );
});

describe('a deleted team', () => {
  it('is taken off its conversations, whose users stay', async () => {
    const team = await newTeam('Closing down');
    const kept = await newTeam('Kept');
    const contact = await insertContact(db(), f.businessId);
    const queued = await insertConversation(db(), f.businessId, contact.id, {
      team_id: team,
      assigned_user_id: f.users.agent,
    });
    const other = await insertConversation(db(), f.businessId, contact.id, { team_id: kept });

    const res = await call(f.t.app, f.admin, 'DELETE', `/teams/${team}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(await conversationRow(queued.id)).toEqual({ assigned_user_id: f.users.agent, team_id: null });
    expect(await conversationRow(other.id)).toEqual({ assigned_user_id: null, team_id: kept });
    expect(await assignmentChanges(queued.id)).toEqual([
      { change: 'assignment', actor_type: 'human', user_id: f.users.admin, reason: 'team_deleted' },
    ]);
    expect(await assignmentChanges(other.id)).toEqual([]);
    // Deleted once: a second deletion is a 404 and writes nothing.
    expect((await call(f.t.app, f.admin, 'DELETE', `/teams/${team}`)).statusCode).toBe(404);
    expect(await assignmentChanges(queued.id)).toHaveLength(1);
  });

  it("another business's team is a 404 and unassigns nothing", async () => {
    const theirs = (await call(f.t.app, f.otherOwner, 'POST', '/teams', { name: 'Theirs' })).json().team.id as string;
    const contact = await insertContact(db(), f.otherBusinessId);
    const conversation = await insertConversation(db(), f.otherBusinessId, contact.id, { team_id: theirs });
    expect((await call(f.t.app, f.admin, 'DELETE', `/teams/${theirs}`)).statusCode).toBe(404);
    expect((await conversationRow(conversation.id)).team_id).toBe(theirs);
  });
});

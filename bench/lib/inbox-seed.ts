import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { newId } from '../../src/lib/ids.ts';

/** What the inbox benchmark's views name: the seeded business's people, teams, channels and contacts. */
export interface InboxSeed {
  businessId: string;
  /** The signed-in user: assigned one conversation in ten, which it has half read. */
  userId: string;
  otherUserId: string;
  teamId: string;
  /** The two WhatsApp channels hold half the conversations each but one in a hundred. */
  whatsappChannelId: string;
  /** The Instagram channel holds one conversation in a hundred. */
  instagramChannelId: string;
  conversations: number;
  /** A contact whose conversation is open, as the searches name it. */
  searched: { lastName: string; phone: string; email: string };
}

const FIRST_NAMES = ['Maria', 'Jose', 'Ana', 'Juan', 'Lucia', 'Pedro', 'Sofia', 'Diego', 'Valentina', 'Mateo'];

/**
 * Seeds `n` conversations of one contact each into the business, with three messages each
 * (inbound, reply, inbound) at the conversation's last activity, spread over 90 days, in a few
 * set-based statements. Of the conversations: 2 in 7 closed; 1 in 100 on Instagram, the others
 * on two WhatsApp channels; 1 in 10 assigned to the user, 6 in 10 to the 9 others, 3 in 10 to
 * nobody; a quarter to each of two teams; 1 in 11 under manual control. The user has read half of
 * its conversations up to the reply. Contacts have one of ten first names, a unique last name
 * (`Surname<i>`), a phone `54911<i, 8 digits>` and an email `user<i>@example.com`.
 */
export async function seedInbox(db: Db, businessId: string, userIds: string[], n: number): Promise<InboxSeed> {
  const [userId, ...others] = userIds;
  const teams = [newId(), newId()];
  const channels = [newId(), newId(), newId()];
  await sql`insert into teams (business_id, id, name) select ${businessId}, t, 'Team ' || o
    from unnest(${teams}::uuid[]) with ordinality as u(t, o)`.execute(db);
  await sql`insert into channels (business_id, id, type, name, identifier)
    values (${businessId}, ${channels[0]}, 'whatsapp', 'Sales', '15550000001'),
           (${businessId}, ${channels[1]}, 'whatsapp', 'Support', '15550000002'),
           (${businessId}, ${channels[2]}, 'instagram', 'Instagram', 'brand')`.execute(db);
  await sql`insert into contacts (business_id, id, first_name, last_name, phone_number, phone_key, email, created_at)
    select ${businessId}, gen_random_uuid(), (${FIRST_NAMES}::text[])[1 + i % 10], 'Surname' || i,
      '54911' || lpad(i::text, 8, '0'), '5411' || lpad(i::text, 8, '0'), 'user' || i || '@example.com',
      now() - interval '100 days'
    from generate_series(1, ${n}) i`.execute(db);
  // One conversation per contact; its activity is a random instant of the last 90 days.
  await sql`insert into conversations (business_id, id, contact_id, channel, channel_id, created_at, last_message_at,
      message_count, closed_at, manual_control, assigned_user_id, team_id)
    select ${businessId}, gen_random_uuid(), k.id,
      case when k.i % 100 = 0 then 'instagram' else 'whatsapp' end,
      (${channels}::uuid[])[case when k.i % 100 = 0 then 3 else 1 + (k.i / 3) % 2 end],
      k.at - interval '1 hour', k.at, 3,
      case when k.i % 7 < 2 then k.at + interval '1 minute' end,
      k.i % 11 = 5,
      case when k.i % 10 = 9 then ${userId}::uuid when k.i % 10 >= 3 then (${others}::uuid[])[1 + k.i % ${others.length}] end,
      (${teams}::uuid[])[1 + k.i % 4]
    from (select id, row_number() over (order by id) as i, now() - random() * interval '90 days' as at
          from contacts where business_id = ${businessId}) k`.execute(db);
  await sql`insert into messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, user_id,
      text, status, created_at)
    select ${businessId}, gen_random_uuid(), c.id, c.contact_id, c.channel, d.direction, d.sender, d.user_id,
      d.text, d.status, c.last_message_at - d.before
    from conversations c
    cross join lateral (values
      ('inbound', 'contact', null::uuid, 'Hello, I have a question about my order', 'RECEIVED', interval '2 minutes'),
      ('outbound', 'human', c.assigned_user_id, 'Thanks for writing, let me check', 'READ', interval '1 minute'),
      ('inbound', 'contact', null::uuid, 'Any news?', 'RECEIVED', interval '0')
    ) d(direction, sender, user_id, text, status, before)
    where c.business_id = ${businessId}`.execute(db);
  await sql`insert into conversation_reads (business_id, user_id, conversation_id, last_read_message_id, last_read_message_at)
    select ${businessId}, ${userId}, m.conversation_id, m.id, m.created_at
    from conversations c join messages m on m.business_id = c.business_id and m.conversation_id = c.id
    where c.business_id = ${businessId} and c.assigned_user_id = ${userId} and m.direction = 'outbound'
      and c.contact_id::text < '8'`.execute(db);
  for (const table of ['contacts', 'conversations', 'messages', 'conversation_reads', 'teams', 'channels'])
    await sql.raw(`analyze ${table}`).execute(db);
  const { rows } = await sql<{ last_name: string; phone_number: string; email: string }>`
    select k.last_name, k.phone_number, k.email from conversations c
    join contacts k on k.business_id = c.business_id and k.id = c.contact_id
    where c.business_id = ${businessId} and c.closed_at is null order by length(k.last_name) desc, k.last_name limit 1`.execute(
    db,
  );
  const [searched] = rows;
  return {
    businessId,
    userId,
    otherUserId: others[0],
    teamId: teams[0],
    whatsappChannelId: channels[0],
    instagramChannelId: channels[2],
    conversations: n,
    searched: { lastName: searched.last_name, phone: `+${searched.phone_number}`, email: searched.email.toUpperCase() },
  };
}

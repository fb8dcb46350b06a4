import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagingNotification } from '../../helpers/fake-meta-messaging-api.ts';
import { awkwardStrings, fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { withMetaChannels, type MetaFixture } from './meta-helpers.ts';

/**
 * A model of Messenger's webhook: sequences of generated events (messages of every kind, echoes,
 * messages on standby, postbacks, reactions, receipts, events of no known kind) with repeated mids,
 * awkward text and fields of the wrong type, each notification signed with the page's app secret.
 * Every notification answers 200 (never a 5xx); each mid the model says is stored is stored exactly
 * once, outbound for an echo and inbound otherwise, the first of its events deciding; nothing else is
 * stored. fast-check is seeded.
 */

const FUZZ = fuzzOptions(40);

let f: MetaFixture;
beforeAll(async () => {
  f = await withMetaChannels();
});
afterAll(() => f.close());

const text = fc.oneof(fc.string({ maxLength: 20 }), awkwardStrings);
const anything = fc.jsonValue({ maxDepth: 2 });
const field = <T>(arbitrary: fc.Arbitrary<T>) => fc.oneof({ weight: 6, arbitrary }, { weight: 1, arbitrary: anything });

const persons = ['7100000000000001', '7100000000000002', '7100000000000003'];

/** One generated event: its kind, the mid it uses (from a small pool, so they repeat), its parts. */
const event = fc.record({
  kind: fc.constantFrom(
    'text',
    'quick_reply',
    'attachment',
    'echo',
    'standby',
    'postback',
    'reaction',
    'delivery',
    'read',
    'junk',
  ),
  mid: fc.integer({ min: 0, max: 5 }),
  person: fc.constantFrom(...persons),
  text: field(text),
  payload: field(text),
  at: fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }) },
    { weight: 1, arbitrary: fc.constantFrom('now', -1, null, 1e20) },
  ),
  junk: anything,
});
type Generated = {
  kind: string;
  mid: number;
  person: string;
  text: unknown;
  payload: unknown;
  at: unknown;
  junk: unknown;
};

let run = 0;

/** The event as Meta posts it, with this run's mids. */
function wire(e: Generated, prefix: string): { field: 'messaging' | 'standby'; body: Record<string, unknown> } {
  const page = f.messenger.account;
  const mid = `m_${prefix}_${e.mid}`;
  const from = { sender: { id: e.person }, recipient: { id: page }, timestamp: e.at };
  switch (e.kind) {
    case 'text':
      return { field: 'messaging', body: { ...from, message: { mid, text: e.text } } };
    case 'quick_reply':
      return {
        field: 'messaging',
        body: { ...from, message: { mid, text: e.text, quick_reply: { payload: e.payload } } },
      };
    case 'attachment':
      return {
        field: 'messaging',
        body: { ...from, message: { mid, attachments: [{ type: 'image', payload: { url: e.payload } }] } },
      };
    case 'echo':
      return {
        field: 'messaging',
        body: {
          sender: { id: page },
          recipient: { id: e.person },
          timestamp: e.at,
          message: { mid, is_echo: true, text: e.text },
        },
      };
    case 'standby':
      return { field: 'standby', body: { ...from, message: { mid, text: e.text } } };
    case 'postback':
      return { field: 'messaging', body: { ...from, postback: { mid, title: e.text, payload: e.payload } } };
    case 'reaction':
      return { field: 'messaging', body: { ...from, reaction: { mid, action: 'react', emoji: e.text } } };
    case 'delivery':
      return { field: 'messaging', body: { ...from, delivery: { mids: [mid], watermark: e.at } } };
    case 'read':
      return { field: 'messaging', body: { ...from, read: { watermark: e.at } } };
    default:
      return { field: 'messaging', body: { ...from, [String(e.kind)]: e.junk, junk: e.junk } };
  }
}

/** Whether the event's time is one Meta could send (what the reader accepts). */
const validTime = (at: unknown) => typeof at === 'number' && at >= 0 && at <= 253402300799000;

describe('Messenger notifications, generated', () => {
  it('are answered 200 and store each message mid exactly once, as the model says', async () => {
    let total = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(event, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
        async (batches) => {
          const prefix = `r${++run}`;
          const model = new Map<string, 'inbound' | 'outbound'>();
          for (const batch of batches) {
            const events = batch.map((e) => wire(e, prefix));
            const body = messagingNotification('page', f.messenger.account, []);
            const entry = body.entry[0] as Record<string, unknown>;
            entry.messaging = events.filter((e) => e.field === 'messaging').map((e) => e.body);
            entry.standby = events.filter((e) => e.field === 'standby').map((e) => e.body);
            const res = await f.post(f.messenger, body);
            expect(res.statusCode, res.body).toBe(200);
            // Messenger stores messages, echoes, standby messages and postbacks by their mid.
            for (const e of [...batch].sort((a, b) => Number(a.kind === 'standby') - Number(b.kind === 'standby'))) {
              if (!['text', 'quick_reply', 'attachment', 'echo', 'standby', 'postback'].includes(e.kind)) continue;
              if (!validTime(e.at)) continue;
              const mid = `m_${prefix}_${e.mid}`;
              if (!model.has(mid)) model.set(mid, e.kind === 'echo' ? 'outbound' : 'inbound');
            }
          }
          const rows = await f.t.database.db
            .selectFrom('messages')
            .select(['provider_message_id', 'direction'])
            .where('business_id', '=', f.tenant.businessId)
            .where('provider_message_id', 'like', `m_${prefix}_%`)
            .execute();
          const stored = new Map(rows.map((r) => [r.provider_message_id!, r.direction]));
          expect(rows).toHaveLength(stored.size);
          expect(stored).toEqual(model);
          total += stored.size;
        },
      ),
      FUZZ,
    );
    // The generator is no use if nothing gets through.
    expect(total).toBeGreaterThan(FUZZ.numRuns);
  }, 300_000);
});

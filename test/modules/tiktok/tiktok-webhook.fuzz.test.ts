import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tiktokEvent } from '../../helpers/fake-tiktok-api.ts';
import { awkwardStrings, fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { withTikTokChannel, type TikTokFixture } from './tiktok-helpers.ts';

/**
 * A model of TikTok's webhook: sequences of generated events (customers' texts, images and other
 * types, the business's echoes, reads, events of no known kind) with repeated message ids, awkward
 * text and fields of the wrong type, each signed with the channel's app secret; and bodies that are
 * no event. An event answers 200 and a body that is none 400 (never a 5xx); each message id the
 * model says is stored is stored exactly once, outbound for an echo and inbound otherwise, the first
 * of its events deciding; nothing else is stored. fast-check is seeded.
 */

const FUZZ = fuzzOptions(30);

let f: TikTokFixture;
beforeAll(async () => {
  f = await withTikTokChannel();
});
afterAll(() => f.close());

const text = fc.oneof(fc.string({ maxLength: 20 }), awkwardStrings);
const anything = fc.jsonValue({ maxDepth: 2 });
const field = <T>(arbitrary: fc.Arbitrary<T>) => fc.oneof({ weight: 6, arbitrary }, { weight: 1, arbitrary: anything });

const conversations = ['0:1:100:200', '0:1:100:201', '0:1:100:202'];

const event = fc.record({
  kind: fc.constantFrom('text', 'image', 'share_post', 'echo', 'read', 'junk', 'not_an_event'),
  id: fc.integer({ min: 0, max: 5 }),
  conversation: fc.constantFrom(...conversations),
  text: field(text),
  at: fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }) },
    { weight: 1, arbitrary: fc.constantFrom('now', -1, null, 1e20) },
  ),
  junk: anything,
});
type Generated = {
  kind: string;
  id: number;
  conversation: string;
  text: unknown;
  at: unknown;
  junk: unknown;
};

let run = 0;

/** The body TikTok would post for the generated event, with this run's message ids. */
function wire(e: Generated, prefix: string): unknown {
  const business = f.fake.businessId;
  const common = { conversation_id: e.conversation, message_id: `${prefix}_${e.id}`, timestamp: e.at };
  const customer = { from: 'someone', from_user: { id: 'u1' }, to: 'shop', to_user: { id: business } };
  switch (e.kind) {
    case 'text':
      return tiktokEvent('im_receive_msg', business, { ...common, ...customer, type: 'text', text: { body: e.text } });
    case 'image':
      return tiktokEvent('im_receive_msg', business, {
        ...common,
        ...customer,
        type: 'image',
        image: { media_id: e.text },
      });
    case 'share_post':
      return tiktokEvent('im_receive_msg', business, {
        ...common,
        ...customer,
        type: 'share_post',
        share_post: { embed_url: e.text },
      });
    case 'echo':
      return tiktokEvent('im_send_msg', business, {
        ...common,
        from_user: { id: business },
        to_user: { id: 'u1' },
        type: 'text',
        text: { body: e.text },
      });
    case 'read':
      return tiktokEvent('im_mark_read_msg', business, { ...common, ...customer, read: { last_read_timestamp: e.at } });
    case 'junk':
      return tiktokEvent(`im_${String(e.text)}_junk`, business, { ...common, junk: e.junk });
    default:
      // Content that is no JSON string.
      return { event: 'im_receive_msg', user_openid: business, content: [e.junk] };
  }
}

describe('TikTok events, generated', () => {
  it('are answered 200 (400 when not an event) and store each message id exactly once, as the model says', async () => {
    let total = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 8 }), async (events) => {
        const prefix = `r${++run}`;
        const model = new Map<string, 'inbound' | 'outbound'>();
        for (const e of events) {
          const res = await f.post(wire(e, prefix));
          // A message stands without its own time: the event's create_time dates it then.
          const stored = ['text', 'image', 'share_post', 'echo'].includes(e.kind);
          expect(res.statusCode, res.body).toBe(e.kind === 'not_an_event' ? 400 : 200);
          const id = `${prefix}_${e.id}`;
          if (stored && !model.has(id)) model.set(id, e.kind === 'echo' ? 'outbound' : 'inbound');
        }
        const rows = await f.t.database.db
          .selectFrom('messages')
          .select(['provider_message_id', 'direction'])
          .where('business_id', '=', f.tenant.businessId)
          .where('provider_message_id', 'like', `${prefix}\\_%`)
          .execute();
        const stored = new Map(rows.map((r) => [r.provider_message_id!, r.direction]));
        expect(rows).toHaveLength(stored.size);
        expect(stored).toEqual(model);
        total += stored.size;
      }),
      FUZZ,
    );
    // The generator is no use if nothing gets through.
    expect(total).toBeGreaterThan(FUZZ.numRuns);
  }, 300_000);
});

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChannelCapabilities } from '../../../src/channels/channel-kind.ts';
import { channelKind } from '../../../src/channels/registry.ts';
import { DomainError } from '../../../src/lib/domain-errors.ts';
import { freeFormContent } from '../../../src/modules/sending/sending.content.ts';
import { messagesRepository } from '../../../src/modules/messages/messages.repository.ts';
import type { FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { inboundContact, newPhone, settled, type TestChannel, withSendingChannel } from './sending.fixtures.ts';

// Sends obey the capabilities of their channel's kind (registry.ts): the service window's length, or
// none, and the media types it sends. The registry's kinds are fixed where the service is built
// (schemas, routes), so the tests read other lengths and media types from the repository and the
// content rules directly, and through the API by giving the WhatsApp kind's entry other capabilities
// for the length of a test.

let t: TestApp;
let fake: FakeGraphApi;
let tenant: Tenant;
let channel: TestChannel;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ t, fake, tenant, channel, close } = await withSendingChannel());
});
afterAll(() => close());
beforeEach(() => fake.reset());

const send = (to: string, extra: Record<string, unknown> = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/external/v2/messages/send',
    headers: tenant.headers,
    payload: { to, from: 'whatsapp', type: 'text', content: { text: 'Hello' }, channel_uuid: channel.id, ...extra },
  });
const sticker = { type: 'sticker', content: { url: 'https://cdn.example.com/s.webp' } };

/** Runs `test` while the channel's kind declares `changes` to its capabilities; restores them after. */
async function withCapabilities(changes: Partial<ChannelCapabilities>, test: () => Promise<void>): Promise<void> {
  const entry = channelKind('whatsapp_cloud') as { capabilities: ChannelCapabilities };
  const declared = entry.capabilities;
  entry.capabilities = { ...declared, ...changes };
  try {
    await test();
  } finally {
    entry.capabilities = declared;
  }
}

describe('the service window of a pair, by its hours (one statement for all pairs)', () => {
  it('is open when the contact wrote on the channel within the hours given for that pair', async () => {
    const wrote = async (hoursAgo: number) => (await inboundContact(t, tenant, channel, hoursAgo)).contact.id;
    const [thirtyAgo, thirtyAgoToo, halfAgo, twoAgo] = [
      await wrote(30),
      await wrote(30),
      await wrote(0.5),
      await wrote(2),
    ];
    const pair = (contactId: string, hours: number) => ({
      contact_id: contactId,
      channel_id: channel.id,
      channel: 'whatsapp',
      hours,
    });
    const open = await messagesRepository.inServiceWindows(t.database.db, tenant.businessId, [
      pair(thirtyAgo, 48),
      pair(thirtyAgoToo, 24),
      pair(halfAgo, 1),
      pair(twoAgo, 1),
    ]);
    expect([...open].sort()).toEqual([`${thirtyAgo}:${channel.id}`, `${halfAgo}:${channel.id}`].sort());
  });
});

describe("sends on a kind's service window", () => {
  it("answers WhatsApp's refusal as before: 24 hours", async () => {
    const { phone } = await inboundContact(t, tenant, channel, 25);
    const res = await send(phone);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: {
        code: 'template_required',
        message: 'the contact has not written on this channel in the last 24 hours; send a template',
      },
    });
  });

  it('takes free-form content within a longer window, and refuses it past a shorter one, naming its length', async () => {
    const late = await inboundContact(t, tenant, channel, 30);
    const recent = await inboundContact(t, tenant, channel, 2);
    await withCapabilities({ serviceWindowHours: 48 }, async () => {
      const res = await send(late.phone);
      expect(res.statusCode, res.body).toBe(200);
      expect((await settled(t, res.json().message.uuid)).status).toBe('SENT');
    });
    await withCapabilities({ serviceWindowHours: 1 }, async () => {
      const res = await send(recent.phone);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toEqual({
        code: 'template_required',
        message: 'the contact has not written on this channel in the last hour; send a template',
      });
    });
    // The declared window is back.
    expect((await send(late.phone)).json().error.code).toBe('template_required');
  });

  it('takes free-form content always on a kind without a window, to a contact it creates too', async () => {
    const long = await inboundContact(t, tenant, channel, 24 * 30);
    const fresh = newPhone();
    await withCapabilities({ serviceWindowHours: null }, async () => {
      for (const to of [long.phone, fresh]) {
        const res = await send(to);
        expect(res.statusCode, res.body).toBe(200);
        expect((await settled(t, res.json().message.uuid)).status).toBe('SENT');
      }
      // A send that is not written with others (an opt-in) goes by the same rule.
      expect((await send(newPhone(), { optin_contact: true })).statusCode).toBe(200);
    });
    const created = await t.database.db
      .selectFrom('contacts')
      .select(['phone_number', 'source'])
      .where('business_id', '=', tenant.businessId)
      .where('phone_number', '=', fresh)
      .execute();
    expect(created).toEqual([{ phone_number: fresh, source: 'whatsapp' }]);
  });
});

describe('sends of a media type the kind does not send', () => {
  it('answer 400 naming the media types the channel sends, plain or not, and write nothing', async () => {
    const { phone } = await inboundContact(t, tenant, channel, 1);
    await withCapabilities({ mediaKinds: ['image', 'document'] }, async () => {
      for (const extra of [sticker, { ...sticker, optin_contact: true }]) {
        const res = await send(phone, extra);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({
          error: {
            code: 'validation_error',
            message: 'this channel does not send sticker messages; the media types it sends: image, document',
            details: [{ path: '/type', supported: ['image', 'document'] }],
          },
        });
      }
      const image = await send(phone, { type: 'image', content: { url: 'https://cdn.example.com/a.png' } });
      expect(image.statusCode, image.body).toBe(200);
    });
    const stickers = await t.database.db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', tenant.businessId)
      .where('type', '=', 'sticker')
      .execute();
    expect(stickers).toEqual([]);
    // WhatsApp sends stickers.
    expect((await send(phone, sticker)).statusCode).toBe(200);
  });

  it('are refused by the content rules, a kind with no media types included', () => {
    const refusal = (mediaKinds: ChannelCapabilities['mediaKinds']) => {
      try {
        freeFormContent('audio', { url: 'https://cdn.example.com/a.ogg' }, { capabilities: { mediaKinds } });
      } catch (err) {
        return err;
      }
    };
    expect(refusal(['audio'])).toBeUndefined();
    const none = refusal([]);
    expect(none).toBeInstanceOf(DomainError);
    expect(none).toMatchObject({
      kind: 'invalid',
      code: 'validation_error',
      message: 'this channel does not send audio messages; the media types it sends: none',
    });
    // A text needs no media type.
    expect(freeFormContent('text', { text: 'hi' }, { capabilities: { mediaKinds: [] } }).text).toBe('hi');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { notificationFor, withWhatsAppChannel, type TestChannel, type WhatsAppFixture } from './whatsapp-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
let post: WhatsAppFixture['post'];
let notify: WhatsAppFixture['notify'];
const waId = '5491133445566';

beforeAll(async () => {
  // No worker: the media_fetch jobs stay in the outbox for the assertions.
  ({ t, tenant, channel, post, notify } = await withWhatsAppChannel());
  await t.app.worker.stop();
});
afterAll(() => t.close());

const db = () => t.database.db;

async function receive(type: string, content: unknown, extra: Record<string, unknown> = {}) {
  const m = inboundMessage(waId, type, content, extra);
  const res = await notify({ contacts: [{ waId, name: 'Content Tester' }], messages: [m] });
  expect(res.statusCode, res.body).toBe(200);
  return db()
    .selectFrom('messages')
    .selectAll()
    .where('provider_message_id', '=', m.id as string)
    .executeTakeFirstOrThrow();
}
const mediaOf = (messageId: string) =>
  db().selectFrom('media').selectAll().where('message_id', '=', messageId).execute();
const jobsOf = (messageId: string) => db().selectFrom('outbox').selectAll().where('ref_id', '=', messageId).execute();

describe('inbound content types', () => {
  it.each([
    [
      'image',
      { id: '1001', mime_type: 'image/jpeg', sha256: 'aa11', caption: 'the receipt' },
      'the receipt',
      { content_type: 'image/jpeg', filename: null, sha256: 'aa11' },
      {},
    ],
    [
      'audio',
      { id: '1002', mime_type: 'audio/ogg; codecs=opus', sha256: 'bb22', voice: true },
      '',
      { content_type: 'audio/ogg; codecs=opus', filename: null, sha256: 'bb22' },
      { voice: true },
    ],
    [
      'video',
      { id: '1003', mime_type: 'video/mp4', sha256: 'cc33' },
      '',
      { content_type: 'video/mp4', filename: null, sha256: 'cc33' },
      {},
    ],
    [
      'document',
      { id: '1004', mime_type: 'application/pdf', sha256: 'dd44', filename: 'invoice.pdf', caption: 'invoice' },
      'invoice',
      { content_type: 'application/pdf', filename: 'invoice.pdf', sha256: 'dd44' },
      {},
    ],
    [
      'sticker',
      { id: '1005', mime_type: 'image/webp', sha256: 'ee55', animated: false },
      '',
      { content_type: 'image/webp', filename: null, sha256: 'ee55' },
      { animated: false },
    ],
  ])('stores %s with a media row and a media_fetch job in the outbox', async (type, content, text, media, metadata) => {
    const row = await receive(type, content);
    expect(row).toMatchObject({ type, text, metadata, status: 'RECEIVED' });
    const [stored, ...more] = await mediaOf(row.id);
    expect(more).toEqual([]);
    expect(stored).toMatchObject({
      business_id: tenant.businessId,
      provider_media_id: content.id,
      storage_key: null,
      ...media,
    });
    const jobs = await jobsOf(row.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ business_id: tenant.businessId, kind: 'media_fetch', state: 'pending' });
  });

  it('stores a location in metadata', async () => {
    const row = await receive('location', {
      latitude: -34.6037,
      longitude: -58.3816,
      name: 'Obelisco',
      address: 'Av. 9 de Julio',
      url: 'https://maps.test/o',
    });
    expect(row).toMatchObject({ type: 'location', text: '' });
    expect(row.metadata).toEqual({
      location: {
        latitude: -34.6037,
        longitude: -58.3816,
        name: 'Obelisco',
        address: 'Av. 9 de Julio',
        url: 'https://maps.test/o',
      },
    });
    expect(await mediaOf(row.id)).toEqual([]);
    expect(await jobsOf(row.id)).toEqual([]);
  });

  it('stores shared contact cards in metadata', async () => {
    const row = await receive('contacts', [
      {
        name: { formatted_name: 'Ada Lovelace', first_name: 'Ada', last_name: 'Lovelace' },
        org: { company: 'Engines' },
        phones: [{ phone: '+44 20 7946 0000', wa_id: '442079460000', type: 'WORK' }],
        emails: [{ email: 'ada@engines.test', type: 'WORK' }],
        urls: [{ url: 'https://ada.test' }],
      },
    ]);
    expect(row.type).toBe('contacts');
    expect(row.metadata).toEqual({
      contacts: [
        {
          formatted_name: 'Ada Lovelace',
          first_name: 'Ada',
          last_name: 'Lovelace',
          organization: 'Engines',
          phones: [{ phone: '+44 20 7946 0000', wa_id: '442079460000', type: 'WORK' }],
          emails: [{ email: 'ada@engines.test', type: 'WORK' }],
          urls: ['https://ada.test'],
        },
      ],
    });
  });

  it('stores interactive replies with their title as text', async () => {
    const button = await receive('interactive', {
      type: 'button_reply',
      button_reply: { id: 'yes', title: 'Yes please' },
    });
    expect(button).toMatchObject({
      type: 'interactive',
      text: 'Yes please',
      metadata: { interactive: { type: 'button_reply', id: 'yes', title: 'Yes please', description: null } },
    });
    const list = await receive('interactive', {
      type: 'list_reply',
      list_reply: { id: 'opt-2', title: 'Blue', description: 'the blue one' },
    });
    expect(list).toMatchObject({
      text: 'Blue',
      metadata: { interactive: { type: 'list_reply', id: 'opt-2', title: 'Blue', description: 'the blue one' } },
    });
  });

  it('stores a template quick-reply button', async () => {
    const row = await receive('button', { text: 'Stop promotions', payload: 'STOP' });
    expect(row).toMatchObject({
      type: 'button',
      text: 'Stop promotions',
      metadata: { button: { text: 'Stop promotions', payload: 'STOP' } },
    });
  });

  it('stores a reaction pointing at the reacted message', async () => {
    const target = await receive('text', { body: 'react to me' });
    const row = await receive('reaction', { message_id: target.provider_message_id, emoji: '👍' });
    expect(row.type).toBe('reaction');
    expect(row.metadata).toEqual({
      reaction: { message_id: target.id, provider_message_id: target.provider_message_id, emoji: '👍' },
    });
    const unknown = await receive('reaction', { message_id: 'wamid.gone' });
    expect(unknown.metadata).toEqual({
      reaction: { message_id: null, provider_message_id: 'wamid.gone', emoji: null },
    });
  });

  it('stores text carrying NUL characters or lone surrogates without them (PostgreSQL cannot hold them)', async () => {
    const row = await receive('text', { body: 'before\u0000after\u0000 😀' });
    expect(row).toMatchObject({ type: 'text', text: 'beforeafter 😀', status: 'RECEIVED' });
    const place = await receive('location', { latitude: 1, longitude: 2, name: 'Caf\ud83d', address: '\udc00 street' });
    expect(place.metadata).toEqual({
      location: { latitude: 1, longitude: 2, name: 'Caf\ufffd', address: '\ufffd street', url: null },
    });
  });

  it('marks forwarded messages', async () => {
    const row = await receive('text', { body: 'fwd' }, { context: { forwarded: true } });
    expect(row.metadata).toEqual({ forwarded: true });
    const often = await receive('text', { body: 'fwd' }, { context: { frequently_forwarded: true } });
    expect(often.metadata).toEqual({ forwarded: true, frequently_forwarded: true });
  });

  it('stores a type it cannot read as unsupported, with the provider type and errors', async () => {
    const row = await receive('unknown', undefined, {
      errors: [
        {
          code: 131051,
          title: 'Message type unknown',
          message: 'Message type unknown',
          error_data: { details: 'Message type is currently not supported.' },
        },
      ],
    });
    expect(row).toMatchObject({ type: 'unsupported', text: '' });
    expect(row.metadata).toEqual({
      provider_type: 'unknown',
      errors: [
        {
          code: '131051',
          title: 'Message type unknown',
          message: 'Message type unknown',
          details: 'Message type is currently not supported.',
        },
      ],
    });
  });

  it('queues one media_fetch job however often the media message is redelivered', async () => {
    const m = inboundMessage(waId, 'image', { id: '2001', mime_type: 'image/png', sha256: 'ff' });
    const body = notificationFor(channel, { messages: [m] });
    for (let i = 0; i < 3; i++) expect((await post(body)).statusCode).toBe(200);
    const row = await db()
      .selectFrom('messages')
      .selectAll()
      .where('provider_message_id', '=', m.id as string)
      .executeTakeFirstOrThrow();
    expect(await mediaOf(row.id)).toHaveLength(1);
    expect(await jobsOf(row.id)).toHaveLength(1);
  });
});

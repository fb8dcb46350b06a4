import { describe, expect, it } from 'vitest';
import { ProviderError, type InboundMessage } from '../../src/channels/provider.ts';
import {
  notificationPhoneNumberIds,
  parseWhatsAppNotification,
} from '../../src/channels/whatsapp-cloud/whatsapp-cloud.notifications.ts';
import { inboundMessage, metaNotification, statusReceipt } from '../helpers/fake-graph-api.ts';

const PNID = '106540352242922';
const FROM = '5491155550000';
const TS = '1763755200'; // 2025-11-21T20:00:00Z

/** Parse one inbound message object sent by FROM (profile "Ana") to PNID. */
function parseOne(type: string, content: unknown, extra: Record<string, unknown> = {}): InboundMessage {
  const raw = { ...inboundMessage(FROM, type, content, extra), id: 'wamid.ONE', timestamp: TS };
  const parsed = parseWhatsAppNotification(
    metaNotification({ phoneNumberId: PNID, contacts: [{ waId: FROM, name: 'Ana' }], messages: [raw] }),
  );
  expect(parsed.messages).toHaveLength(1);
  return parsed.messages[0];
}

const base = {
  providerMessageId: 'wamid.ONE',
  from: FROM,
  profileName: 'Ana',
  to: PNID,
  timestamp: '2025-11-21T20:00:00.000000Z',
  text: null,
  media: null,
  location: null,
  contacts: [],
  interactive: null,
  button: null,
  reaction: null,
  context: null,
  errors: [],
};

describe('WhatsApp Cloud inbound notifications', () => {
  it('parses a text message with the sender profile', () => {
    const parsed = parseWhatsAppNotification(
      metaNotification({
        phoneNumberId: PNID,
        contacts: [{ waId: FROM, name: 'Ana' }],
        messages: [{ from: FROM, id: 'wamid.ONE', timestamp: TS, type: 'text', text: { body: 'Hola' } }],
      }),
    );
    expect(parsed).toStrictEqual({
      messages: [{ ...base, type: 'text', providerType: 'text', text: 'Hola' }],
      statuses: [],
      contacts: [{ address: FROM, name: 'Ana' }],
    });
  });

  it('parses image, video and document media with caption, sha256 and filename', () => {
    const image = parseOne('image', { caption: 'look', mime_type: 'image/jpeg', sha256: 'abc=', id: '1234567890' });
    expect(image).toStrictEqual({
      ...base,
      type: 'image',
      providerType: 'image',
      text: 'look',
      media: { providerMediaId: '1234567890', mimeType: 'image/jpeg', sha256: 'abc=', filename: null, caption: 'look' },
    });
    expect(parseOne('video', { mime_type: 'video/mp4', sha256: 'v', id: '22' }).media).toStrictEqual({
      providerMediaId: '22',
      mimeType: 'video/mp4',
      sha256: 'v',
      filename: null,
      caption: null,
    });
    const doc = parseOne('document', {
      caption: 'the invoice',
      filename: 'invoice.pdf',
      mime_type: 'application/pdf',
      sha256: 'd',
      id: '33',
    });
    expect(doc.type).toBe('document');
    expect(doc.media).toStrictEqual({
      providerMediaId: '33',
      mimeType: 'application/pdf',
      sha256: 'd',
      filename: 'invoice.pdf',
      caption: 'the invoice',
    });
  });

  it('parses voice notes and animated stickers', () => {
    expect(
      parseOne('audio', { mime_type: 'audio/ogg; codecs=opus', sha256: 'a', id: '44', voice: true }).media,
    ).toStrictEqual({
      providerMediaId: '44',
      mimeType: 'audio/ogg; codecs=opus',
      sha256: 'a',
      filename: null,
      caption: null,
      voice: true,
    });
    const sticker = parseOne('sticker', { mime_type: 'image/webp', sha256: 's', id: '55', animated: false });
    expect(sticker).toMatchObject({ type: 'sticker', media: { providerMediaId: '55', animated: false } });
  });

  it('parses a location', () => {
    const message = parseOne('location', {
      latitude: -34.6037,
      longitude: -58.3816,
      name: 'Obelisco',
      address: 'Av. 9 de Julio s/n',
    });
    expect(message).toMatchObject({
      type: 'location',
      location: { latitude: -34.6037, longitude: -58.3816, name: 'Obelisco', address: 'Av. 9 de Julio s/n', url: null },
    });
  });

  it('parses shared contact cards', () => {
    const message = parseOne('contacts', [
      {
        name: { formatted_name: 'Juan Pérez', first_name: 'Juan', last_name: 'Pérez' },
        org: { company: 'Acme' },
        phones: [
          { phone: '+54 9 11 5555-1111', wa_id: '5491155551111', type: 'CELL' },
          { phone: '+54 11 4444-0000', type: 'WORK' },
        ],
        emails: [{ email: 'juan@example.com', type: 'WORK' }],
        urls: [{ url: 'https://acme.example', type: 'WORK' }],
      },
    ]);
    expect(message.type).toBe('contacts');
    expect(message.contacts).toStrictEqual([
      {
        formattedName: 'Juan Pérez',
        firstName: 'Juan',
        lastName: 'Pérez',
        organization: 'Acme',
        phones: [
          { phone: '+54 9 11 5555-1111', waId: '5491155551111', type: 'CELL' },
          { phone: '+54 11 4444-0000', waId: null, type: 'WORK' },
        ],
        emails: [{ email: 'juan@example.com', type: 'WORK' }],
        urls: ['https://acme.example'],
      },
    ]);
  });

  it('parses interactive button and list replies with their reply context', () => {
    const context = { from: '15550783881', id: 'wamid.ASKED' };
    const button = parseOne(
      'interactive',
      { type: 'button_reply', button_reply: { id: 'change', title: 'Change' } },
      { context },
    );
    expect(button).toMatchObject({
      type: 'interactive',
      text: 'Change',
      interactive: { kind: 'button_reply', id: 'change', title: 'Change', description: null },
      context: {
        replyToProviderMessageId: 'wamid.ASKED',
        replyToFrom: '15550783881',
        forwarded: false,
        frequentlyForwarded: false,
      },
    });
    const list = parseOne(
      'interactive',
      { type: 'list_reply', list_reply: { id: 'row-2', title: 'Tuesday', description: 'Afternoon slot' } },
      { context },
    );
    expect(list.interactive).toStrictEqual({
      kind: 'list_reply',
      id: 'row-2',
      title: 'Tuesday',
      description: 'Afternoon slot',
    });
  });

  it('parses a template quick-reply button', () => {
    const message = parseOne(
      'button',
      { text: 'Stop promotions', payload: 'STOP' },
      { context: { from: '15550783881', id: 'wamid.TEMPLATE' } },
    );
    expect(message).toMatchObject({
      type: 'button',
      text: 'Stop promotions',
      button: { text: 'Stop promotions', payload: 'STOP' },
    });
    expect(message.context?.replyToProviderMessageId).toBe('wamid.TEMPLATE');
  });

  it('parses reactions, and a removed reaction has no emoji', () => {
    expect(parseOne('reaction', { message_id: 'wamid.MINE', emoji: '👍' }).reaction).toStrictEqual({
      providerMessageId: 'wamid.MINE',
      emoji: '👍',
    });
    expect(parseOne('reaction', { message_id: 'wamid.MINE' }).reaction).toStrictEqual({
      providerMessageId: 'wamid.MINE',
      emoji: null,
    });
  });

  it('marks forwarded and frequently forwarded messages', () => {
    expect(parseOne('text', { body: 'fw' }, { context: { forwarded: true } }).context).toStrictEqual({
      replyToProviderMessageId: null,
      replyToFrom: null,
      forwarded: true,
      frequentlyForwarded: false,
    });
    expect(parseOne('text', { body: 'fw' }, { context: { frequently_forwarded: true } }).context).toMatchObject({
      forwarded: true,
      frequentlyForwarded: true,
    });
  });

  it('keeps unsupported and unknown types, with their errors', () => {
    const message = parseOne('unsupported', undefined, {
      errors: [
        {
          code: 131051,
          title: 'Message type unknown',
          message: 'Message type unknown',
          error_data: { details: 'Message type is currently not supported.' },
        },
      ],
    });
    expect(message).toMatchObject({ type: 'unsupported', providerType: 'unsupported', text: null });
    expect(message.errors).toStrictEqual([
      {
        code: '131051',
        title: 'Message type unknown',
        message: 'Message type unknown',
        details: 'Message type is currently not supported.',
      },
    ]);
    expect(parseOne('order', { catalog_id: '1', product_items: [] })).toMatchObject({
      type: 'unsupported',
      providerType: 'order',
    });
    // A known type whose object is missing is not trusted as that type.
    expect(parseOne('image', { caption: 'no id' })).toMatchObject({
      type: 'unsupported',
      providerType: 'image',
      media: null,
    });
  });

  it('parses delivery receipts, failures with their errors', () => {
    const parsed = parseWhatsAppNotification(
      metaNotification({
        phoneNumberId: PNID,
        statuses: [
          { ...statusReceipt('wamid.A', 'sent', FROM), timestamp: TS },
          { ...statusReceipt('wamid.A', 'delivered', FROM), timestamp: '1763755201' },
          { ...statusReceipt('wamid.A', 'read', FROM), timestamp: '1763755202', biz_opaque_callback_data: 'ref-1' },
          {
            ...statusReceipt('wamid.B', 'failed', FROM),
            timestamp: TS,
            errors: [
              {
                code: 131026,
                title: 'Message undeliverable',
                message: 'Message undeliverable',
                error_data: { details: 'Recipient is not a WhatsApp user' },
                href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
              },
            ],
          },
        ],
      }),
    );
    expect(parsed.messages).toEqual([]);
    expect(parsed.statuses).toStrictEqual([
      {
        providerMessageId: 'wamid.A',
        status: 'sent',
        timestamp: '2025-11-21T20:00:00.000000Z',
        recipient: FROM,
        from: PNID,
        errors: [],
      },
      {
        providerMessageId: 'wamid.A',
        status: 'delivered',
        timestamp: '2025-11-21T20:00:01.000000Z',
        recipient: FROM,
        from: PNID,
        errors: [],
      },
      {
        providerMessageId: 'wamid.A',
        status: 'read',
        timestamp: '2025-11-21T20:00:02.000000Z',
        recipient: FROM,
        from: PNID,
        errors: [],
        reference: 'ref-1',
      },
      {
        providerMessageId: 'wamid.B',
        status: 'failed',
        timestamp: '2025-11-21T20:00:00.000000Z',
        recipient: FROM,
        from: PNID,
        errors: [
          {
            code: '131026',
            title: 'Message undeliverable',
            message: 'Message undeliverable',
            details: 'Recipient is not a WhatsApp user',
          },
        ],
      },
    ]);
  });

  it("skips messages and receipts whose identifiers are longer than any of Meta's (256 characters)", () => {
    const long = 'x'.repeat(257);
    const parsed = parseWhatsAppNotification(
      metaNotification({
        phoneNumberId: PNID,
        contacts: [{ waId: long, name: 'Long' }],
        messages: [
          { ...inboundMessage(FROM, 'text', { body: 'long id' }), id: `wamid.${long}` },
          inboundMessage(long, 'text', { body: 'long sender' }),
          { ...inboundMessage(FROM, 'text', { body: 'kept' }), id: `wamid.${'y'.repeat(200)}` },
        ],
        statuses: [statusReceipt(`wamid.${long}`, 'read', FROM)],
      }),
    );
    expect(parsed.messages.map((m) => m.text)).toEqual(['kept']);
    expect(parsed.statuses).toEqual([]);
    expect(parsed.contacts).toEqual([]);
  });

  it('reads every entry and change, and the phone_number_ids it is addressed to', () => {
    const body = metaNotification(
      { phoneNumberId: '111', messages: [inboundMessage('15551110000', 'text', { body: 'one' })] },
      {
        phoneNumberId: '222',
        contacts: [{ waId: '15552220000', name: 'Bo' }],
        messages: [inboundMessage('15552220000', 'text', { body: 'two' })],
      },
    );
    const parsed = parseWhatsAppNotification(body);
    expect(parsed.messages.map((m) => [m.to, m.text, m.profileName])).toEqual([
      ['111', 'one', null],
      ['222', 'two', 'Bo'],
    ]);
    expect(notificationPhoneNumberIds(body)).toEqual(['111', '222']);
  });

  it('skips malformed items and changes of other fields', () => {
    const body = metaNotification({
      phoneNumberId: PNID,
      messages: [
        { id: 'wamid.NOFROM', timestamp: TS, type: 'text', text: { body: 'x' } },
        { from: FROM, id: 'wamid.BADTS', timestamp: 'yesterday', type: 'text', text: { body: 'x' } },
        'not an object',
        { from: FROM, id: 'wamid.OK', timestamp: TS, type: 'text', text: { body: 'ok' } },
      ] as unknown as Record<string, unknown>[],
      statuses: [{ id: 'wamid.X', status: 'deleted', timestamp: TS, recipient_id: FROM }],
    });
    (body.entry as { changes: unknown[] }[])[0].changes.push({
      field: 'message_template_status_update',
      value: { event: 'APPROVED' },
    });
    const parsed = parseWhatsAppNotification(body);
    expect(parsed.messages.map((m) => m.providerMessageId)).toEqual(['wamid.OK']);
    expect(parsed.statuses).toEqual([]);
  });

  it.each([null, 'text', [], {}, { object: 'page', entry: [] }, { object: 'whatsapp_business_account' }])(
    'refuses a body that is not a WhatsApp notification: %j',
    (body) => {
      expect(() => parseWhatsAppNotification(body)).toThrowError(ProviderError);
      expect(() => notificationPhoneNumberIds(body)).toThrowError(/not a WhatsApp Business Account notification/);
    },
  );
});

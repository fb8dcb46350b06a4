import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { MediaKind, SendRequest } from '../../src/channels/provider.ts';
import { WhatsAppCloudProvider } from '../../src/channels/whatsapp-cloud/whatsapp-cloud.provider.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';

const PHONE_NUMBER_ID = '106540352242922';
let graph: FakeGraphApi;
let provider: WhatsAppCloudProvider;

beforeAll(async () => {
  graph = await startFakeGraphApi();
  provider = new WhatsAppCloudProvider({
    kind: 'whatsapp_cloud',
    phone_number_id: PHONE_NUMBER_ID,
    access_token: graph.accessToken,
    app_secret: 'app-secret',
    verify_token: 'verify-token',
    api_base_url: graph.baseUrl,
  });
});
afterAll(() => graph.close());
beforeEach(() => graph.reset());

/** Send and return the one request the fake received. */
async function sentBody(request: SendRequest) {
  const result = await provider.send(request);
  expect(graph.sends()).toHaveLength(1);
  return { result, sent: graph.sends()[0] };
}

describe('WhatsApp Cloud send: the exact Graph API request', () => {
  it('posts a text to /{phone_number_id}/messages with the bearer token and answers the wamid', async () => {
    const { result, sent } = await sentBody({ to: '5491155550000', content: { kind: 'text', text: 'Hola Ana' } });
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe(`/v21.0/${PHONE_NUMBER_ID}/messages`);
    expect(sent.headers.authorization).toBe(`Bearer ${graph.accessToken}`);
    expect(sent.headers['content-type']).toBe('application/json');
    expect(JSON.parse(sent.rawBody)).toStrictEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '5491155550000',
      type: 'text',
      text: { body: 'Hola Ana', preview_url: false },
    });
    expect(result.providerMessageId).toMatch(/^wamid\.[A-Za-z0-9+/=]+$/);
    expect(result.recipientId).toBe('5491155550000');
    expect(result.providerStatus).toBeUndefined();
  });

  it('asks for a link preview when told to', async () => {
    const { sent } = await sentBody({
      to: '15551234567',
      content: { kind: 'text', text: 'https://example.com', previewUrl: true },
    });
    expect((sent.body as { text: unknown }).text).toStrictEqual({ body: 'https://example.com', preview_url: true });
  });

  it('asks Meta to echo the reference in the receipts (biz_opaque_callback_data)', async () => {
    const reference = '01a2123f-604b-7069-bd66-e1501081efa7';
    const { sent } = await sentBody({ to: '15551234567', content: { kind: 'text', text: 'Hi' }, reference });
    expect((sent.body as Record<string, unknown>).biz_opaque_callback_data).toBe(reference);
  });

  it('adds the reply context', async () => {
    const { sent } = await sentBody({
      to: '15551234567',
      content: { kind: 'text', text: 'Sí' },
      replyToProviderMessageId: 'wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQzQTdBMUY0',
    });
    expect(sent.body).toStrictEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '15551234567',
      context: { message_id: 'wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQzQTdBMUY0' },
      type: 'text',
      text: { body: 'Sí', preview_url: false },
    });
  });

  const mediaCases: [MediaKind, Record<string, unknown>][] = [
    ['image', { link: 'https://cdn.example.com/a.jpg', caption: 'the caption' }],
    ['video', { link: 'https://cdn.example.com/a.jpg', caption: 'the caption' }],
    ['document', { link: 'https://cdn.example.com/a.jpg', caption: 'the caption', filename: 'invoice.pdf' }],
    // Meta refuses captions on audio and stickers, and filenames on anything but documents.
    ['audio', { link: 'https://cdn.example.com/a.jpg' }],
    ['sticker', { link: 'https://cdn.example.com/a.jpg' }],
  ];
  it.each(mediaCases)('sends %s by link', async (mediaKind, expected) => {
    const { sent } = await sentBody({
      to: '15551234567',
      content: {
        kind: 'media',
        mediaKind,
        url: 'https://cdn.example.com/a.jpg',
        caption: 'the caption',
        filename: 'invoice.pdf',
      },
    });
    expect(sent.body).toStrictEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '15551234567',
      type: mediaKind,
      [mediaKind]: expected,
    });
  });

  it('sends media without a caption', async () => {
    const { sent } = await sentBody({
      to: '15551234567',
      content: { kind: 'media', mediaKind: 'image', url: 'https://cdn.example.com/b.png' },
    });
    expect((sent.body as { image: unknown }).image).toStrictEqual({ link: 'https://cdn.example.com/b.png' });
  });

  it('sends a positional template with a URL button (index is a string)', async () => {
    const { sent, result } = await sentBody({
      to: '5215512345678',
      content: {
        kind: 'template',
        name: 'order_update',
        languageCode: 'es',
        bodyParameters: [{ text: 'Ana' }, { text: '#1234' }],
        urlButtons: [{ index: '0', text: 'abc123' }],
      },
    });
    expect(sent.body).toStrictEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '5215512345678',
      type: 'template',
      template: {
        name: 'order_update',
        language: { code: 'es' },
        components: [
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ana' },
              { type: 'text', text: '#1234' },
            ],
          },
          { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'abc123' }] },
        ],
      },
    });
    expect(result.providerStatus).toBe('accepted');
    expect(result.recipientId).toBe('5215512345678');
  });

  it('sends a named template with parameter_name on each body parameter', async () => {
    const { sent } = await sentBody({
      to: '15551234567',
      content: {
        kind: 'template',
        name: 'welcome',
        languageCode: 'en_US',
        header: { kind: 'text', parameters: [{ name: 'store', text: 'Acme' }] },
        bodyParameters: [
          { name: 'first_name', text: 'Ana' },
          { name: 'order_id', text: '1234' },
        ],
        urlButtons: [{ index: '1', text: 'track/1234' }],
      },
    });
    expect((sent.body as { template: unknown }).template).toStrictEqual({
      name: 'welcome',
      language: { code: 'en_US' },
      components: [
        { type: 'header', parameters: [{ type: 'text', parameter_name: 'store', text: 'Acme' }] },
        {
          type: 'body',
          parameters: [
            { type: 'text', parameter_name: 'first_name', text: 'Ana' },
            { type: 'text', parameter_name: 'order_id', text: '1234' },
          ],
        },
        { type: 'button', sub_type: 'url', index: '1', parameters: [{ type: 'text', text: 'track/1234' }] },
      ],
    });
  });

  it('sends a template with a document header, and one without variables has no components', async () => {
    await provider.send({
      to: '15551234567',
      content: {
        kind: 'template',
        name: 'receipt',
        languageCode: 'en',
        header: { kind: 'document', url: 'https://x.test/r.pdf', filename: 'r.pdf' },
      },
    });
    await provider.send({
      to: '15551234567',
      content: { kind: 'template', name: 'hello_world', languageCode: 'en_US' },
    });
    const [withHeader, plain] = graph.sends().map((s) => (s.body as { template: unknown }).template);
    expect(withHeader).toStrictEqual({
      name: 'receipt',
      language: { code: 'en' },
      components: [
        {
          type: 'header',
          parameters: [{ type: 'document', document: { link: 'https://x.test/r.pdf', filename: 'r.pdf' } }],
        },
      ],
    });
    expect(plain).toStrictEqual({ name: 'hello_world', language: { code: 'en_US' } });
  });

  it('reports the canonical wa_id Meta answers with', async () => {
    const quirky = await startFakeGraphApi({ waIdFor: (input) => input.replace(/^549/, '54') });
    try {
      const argentine = new WhatsAppCloudProvider({
        kind: 'whatsapp_cloud',
        phone_number_id: PHONE_NUMBER_ID,
        access_token: quirky.accessToken,
        app_secret: 's',
        verify_token: 'v',
        api_base_url: `${quirky.baseUrl}/`,
      });
      const result = await argentine.send({ to: '5491155550000', content: { kind: 'text', text: 'hola' } });
      expect(result.recipientId).toBe('541155550000');
      expect(quirky.sends()[0].path).toBe(`/v21.0/${PHONE_NUMBER_ID}/messages`);
    } finally {
      await quirky.close();
    }
  });
});

/** A TCP relay to the fake that counts the connections and bytes the adapter opens and writes. */
async function countingRelay(target: string) {
  const { hostname, port } = new URL(target);
  const counts = { connections: 0, bytes: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    counts.connections++;
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => (counts.bytes += chunk.length));
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    counts,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('WhatsApp Cloud send: beforeSend', () => {
  it('is called once the connection is open, and nothing of the request is written before it resolves', async () => {
    const relay = await countingRelay(graph.origin);
    const agent = new Agent();
    const relayed = new WhatsAppCloudProvider(
      {
        kind: 'whatsapp_cloud',
        phone_number_id: PHONE_NUMBER_ID,
        access_token: graph.accessToken,
        app_secret: 'app-secret',
        verify_token: 'verify-token',
        api_base_url: `${relay.url}${new URL(graph.baseUrl).pathname}`,
      },
      { dispatcher: agent },
    );
    try {
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      const seen: { connections: number; bytes: number }[] = [];
      const sending = relayed.send({
        to: '15551234567',
        content: { kind: 'text', text: 'Hi' },
        beforeSend: async () => {
          seen.push({ ...relay.counts });
          await released;
        },
      });
      for (const end = Date.now() + 5_000; seen.length === 0 && Date.now() < end;)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(seen).toEqual([{ connections: 1, bytes: 0 }]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(relay.counts.bytes).toBe(0);
      release();
      expect((await sending).providerMessageId).toMatch(/^wamid\./);
      expect(graph.sends()).toHaveLength(1);

      // A rejection aborts the request with nothing written.
      const before = relay.counts.bytes;
      await expect(
        relayed.send({
          to: '15551234567',
          content: { kind: 'text', text: 'Hi' },
          beforeSend: () => Promise.reject(new Error('not this one')),
        }),
      ).rejects.toThrow('not this one');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(relay.counts.bytes).toBe(before);
      expect(graph.sends()).toHaveLength(1);
    } finally {
      await agent.close();
      await relay.close();
    }
  });
});

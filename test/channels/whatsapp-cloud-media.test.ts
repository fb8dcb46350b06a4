import { randomBytes } from 'node:crypto';
import { Agent, Pool } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/channels/provider.ts';
import { WhatsAppCloudProvider } from '../../src/channels/whatsapp-cloud/whatsapp-cloud.provider.ts';
import { guardedConnector } from '../../src/net/ssrf-guard.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';

let graph: FakeGraphApi;

const providerWith = (accessToken: string, http = {}) =>
  new WhatsAppCloudProvider(
    {
      kind: 'whatsapp_cloud',
      phone_number_id: '106540352242922',
      access_token: accessToken,
      app_secret: 's',
      verify_token: 'v',
      api_base_url: graph.baseUrl,
    },
    http,
  );

beforeAll(async () => {
  graph = await startFakeGraphApi();
});
afterAll(() => graph.close());
beforeEach(() => graph.reset());

describe('WhatsApp Cloud media fetch', () => {
  it('looks the media id up, then downloads the URL with the same bearer token', async () => {
    const bytes = randomBytes(70_000);
    const { id, sha256 } = graph.addMedia({ bytes, mimeType: 'image/jpeg' });
    const media = await providerWith(graph.accessToken).fetchMedia(id);
    expect(media.bytes.equals(bytes)).toBe(true);
    expect(media).toMatchObject({ mimeType: 'image/jpeg', sha256, fileSize: 70_000 });
    const [lookup, download] = graph.requests;
    expect(lookup).toMatchObject({ method: 'GET', path: `/v21.0/${id}` });
    expect(download).toMatchObject({ method: 'GET', path: '/whatsapp_business/attachments/', query: { mid: id } });
    for (const request of [lookup, download]) expect(request.headers.authorization).toBe(`Bearer ${graph.accessToken}`);
  });

  it('fails finally on an unknown media id (Graph error 100)', async () => {
    const provider = providerWith(graph.accessToken);
    const err = await provider.fetchMedia('999').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(provider.classifyError(err)).toMatchObject({ retryable: false, code: '100' });
  });

  it('is refused with a wrong token (401, Graph error 190)', async () => {
    const { id } = graph.addMedia({ bytes: Buffer.from('x'), mimeType: 'text/plain' });
    const provider = providerWith('wrong-token');
    const err = await provider.fetchMedia(id).catch((e: unknown) => e);
    expect(err).toMatchObject({ httpStatus: 401, code: '190' });
    expect(provider.classifyError(err).retryable).toBe(false);
  });

  it('refuses media over the size limit', async () => {
    const { id } = graph.addMedia({ bytes: randomBytes(2048), mimeType: 'application/pdf' });
    const err = await providerWith(graph.accessToken, { maxMediaBytes: 1024 })
      .fetchMedia(id)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'media_too_large', retryable: false });
  });

  it('a slow download times out and is retryable', async () => {
    const { id } = graph.addMedia({ bytes: Buffer.from('x'), mimeType: 'text/plain' });
    graph.setDelay(1_000);
    const provider = providerWith(graph.accessToken, { timeoutMs: 150 });
    const err = await provider.fetchMedia(id).catch((e: unknown) => e);
    expect(provider.classifyError(err)).toMatchObject({ retryable: true, code: 'timeout' });
  });

  it('downloads through the dispatcher it is given: a media URL on a private host is refused, its token kept', async () => {
    const mediaHost = await startFakeGraphApi({ accessToken: graph.accessToken });
    // The fake Graph API is let through; any other origin gets the service's address policy.
    const strict = guardedConnector({ allowPrivate: false });
    const dispatcher = new Agent({
      factory: (origin, options) =>
        new Pool(origin, String(origin) === graph.origin ? options : { ...options, connect: strict }),
    });
    try {
      for (const [origin, refusal] of [
        [mediaHost.origin.replace('127.0.0.1', 'localhost'), /^provider address refused: localhost resolves to /],
        [mediaHost.origin, /^provider address refused: 127\.0\.0\.1 is not a public address$/],
      ] as const) {
        graph.reset();
        graph.setMediaOrigin(origin);
        const { id } = graph.addMedia({ bytes: Buffer.from('x'), mimeType: 'text/plain' });
        const provider = providerWith(graph.accessToken, { dispatcher });
        const err = await provider.fetchMedia(id).catch((e: unknown) => e);
        expect(provider.classifyError(err)).toEqual({
          retryable: false,
          code: 'target_refused',
          detail: expect.stringMatching(refusal),
        });
        expect(graph.requests.map((r) => r.path)).toEqual([`/v21.0/${id}`]);
      }
      expect(mediaHost.requests).toEqual([]);
      expect(mediaHost.connections()).toBe(0);
    } finally {
      await dispatcher.close();
      await mediaHost.close();
    }
  });
});

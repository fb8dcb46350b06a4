import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/channels/provider.ts';
import { graphError } from '../../src/channels/meta/graph.errors.ts';
import { WhatsAppCloudProvider } from '../../src/channels/whatsapp-cloud/whatsapp-cloud.provider.ts';
import { startFakeGraphApi, type FakeGraphApi, type GraphFailure } from '../helpers/fake-graph-api.ts';

let graph: FakeGraphApi;

const providerFor = (baseUrl: string, accessToken: string, timeoutMs = 2_000) =>
  new WhatsAppCloudProvider(
    {
      kind: 'whatsapp_cloud',
      phone_number_id: '106540352242922',
      access_token: accessToken,
      app_secret: 's',
      verify_token: 'v',
      api_base_url: baseUrl,
    },
    { timeoutMs },
  );

beforeAll(async () => {
  graph = await startFakeGraphApi();
});
afterAll(() => graph.close());
beforeEach(() => graph.reset());

const text = { to: '15551234567', content: { kind: 'text' as const, text: 'hi' } };

/** Send through the fake set to fail once, and classify what the provider threw. */
async function failedSend(failure: GraphFailure) {
  const provider = providerFor(graph.baseUrl, graph.accessToken);
  graph.failNextSends(1, failure);
  const err = await provider.send(text).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return provider.classifyError(err);
}

describe('WhatsApp Cloud error classification', () => {
  const retryable: [string, GraphFailure][] = [
    ['130429 throughput exceeded', { status: 400, code: 130429, message: '(#130429) Rate limit hit' }],
    [
      '131056 pair rate limit',
      { status: 400, code: 131056, message: '(#131056) (Business Account, Consumer Account) pair rate limit hit' },
    ],
    ['131000 generic service error', { status: 500, code: 131000, message: 'Something went wrong' }],
    ['131016 service unavailable', { status: 503, code: 131016, message: 'Service unavailable' }],
    ['an unknown code with a 5xx', { status: 502, code: 999999, message: 'Bad gateway' }],
    ['an unknown code with 429', { status: 429, code: 999998, message: 'Too many' }],
  ];
  it.each(retryable)('%s is retryable', async (_name, failure) => {
    const result = await failedSend(failure);
    expect(result).toMatchObject({ retryable: true, code: String(failure.code) });
    expect(result.detail).toContain(failure.message);
  });

  const final: [string, GraphFailure][] = [
    [
      '131047 outside the 24-hour window',
      {
        status: 400,
        code: 131047,
        message: 'Re-engagement message',
        details:
          'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
      },
    ],
    ['131026 undeliverable', { status: 400, code: 131026, message: 'Message Undeliverable' }],
    [
      '131030 recipient not in allowed list',
      { status: 400, code: 131030, message: 'Recipient phone number not in allowed list' },
    ],
    [
      '132000 template parameter count mismatch',
      { status: 400, code: 132000, message: 'Number of parameters does not match the expected number of params' },
    ],
    [
      '132001 template does not exist',
      { status: 404, code: 132001, message: 'Template name does not exist in the translation' },
    ],
    ['132015 template paused', { status: 400, code: 132015, message: 'Template is Paused' }],
    ['100 invalid parameter', { status: 400, code: 100, message: '(#100) Invalid parameter' }],
    [
      '190 expired token, even with a 5xx',
      { status: 500, code: 190, message: 'Error validating access token: Session has expired' },
    ],
    ['another 4xx code', { status: 400, code: 131051, message: 'Unsupported message type' }],
  ];
  it.each(final)('%s is final', async (_name, failure) => {
    const result = await failedSend(failure);
    expect(result).toMatchObject({ retryable: false, code: String(failure.code) });
    expect(result.detail).toContain(failure.message);
  });

  it('keeps the details and subcode of the Graph error in the detail', async () => {
    const result = await failedSend({
      status: 400,
      code: 131047,
      subcode: 2494010,
      message: 'Re-engagement message',
      details: 'more than 24 hours have passed',
    });
    expect(result.detail).toBe('Re-engagement message: more than 24 hours have passed (subcode 2494010)');
  });

  it('an answer without a Graph error body is classified by HTTP status', () => {
    expect(graphError(502, '<html>Bad Gateway</html>')).toMatchObject({
      code: 'http_502',
      retryable: true,
      httpStatus: 502,
    });
    expect(graphError(429, null)).toMatchObject({ code: 'http_429', retryable: true });
    expect(graphError(403, { unexpected: true })).toMatchObject({ code: 'http_403', retryable: false });
  });

  it('a wrong access token is final (190 with 401)', async () => {
    const provider = providerFor(graph.baseUrl, 'wrong-token');
    const err = await provider.send(text).catch((e: unknown) => e);
    expect(err).toMatchObject({ httpStatus: 401 });
    expect(provider.classifyError(err)).toMatchObject({ retryable: false, code: '190' });
  });

  it('a timeout is retryable, but the request may have arrived', async () => {
    const provider = providerFor(graph.baseUrl, graph.accessToken, 150);
    graph.setDelay(1_000);
    const err = await provider.send(text).catch((e: unknown) => e);
    expect(provider.classifyError(err)).toMatchObject({ retryable: true, mayHaveArrived: true, code: 'timeout' });
  });

  it('a dropped connection is retryable, but the request may have arrived', async () => {
    const provider = providerFor(graph.baseUrl, graph.accessToken);
    graph.disconnectNextSends(1);
    const err = await provider.send(text).catch((e: unknown) => e);
    expect(provider.classifyError(err)).toMatchObject({ retryable: true, mayHaveArrived: true, code: 'network_error' });
    // The fake answers again afterwards: the next attempt goes through.
    await expect(provider.send(text)).resolves.toMatchObject({ providerMessageId: expect.stringMatching(/^wamid\./) });
  });

  it('a refused connection is retryable, and the request cannot have arrived', async () => {
    const port = await freePort();
    const provider = providerFor(`http://127.0.0.1:${port}/v21.0`, 'token');
    const err = await provider.send(text).catch((e: unknown) => e);
    const failure = provider.classifyError(err);
    expect(failure).toMatchObject({ retryable: true, code: 'network_error' });
    expect(failure.mayHaveArrived).toBeUndefined();
  });

  it('an error of our own is final', () => {
    const provider = providerFor(graph.baseUrl, graph.accessToken);
    expect(provider.classifyError(new TypeError('x is undefined'))).toEqual({
      retryable: false,
      code: 'internal_error',
      detail: 'x is undefined',
    });
  });
});

/** A port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

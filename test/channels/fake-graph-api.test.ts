import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';

// The fake stands in for Meta in every messaging test, so it must refuse what Meta refuses.
let graph: FakeGraphApi;
beforeAll(async () => {
  graph = await startFakeGraphApi();
});
afterAll(() => graph.close());

async function post(path: string, body: unknown, token = graph.accessToken) {
  const response = await request(`${graph.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, body: (await response.body.json()) as { error?: Record<string, unknown> } };
}

describe('fake Graph API', () => {
  it('answers a malformed send with Graph error 100', async () => {
    const answer = await post('/123/messages', { messaging_product: 'whatsapp', to: '1555', type: 'text' });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 100, type: 'OAuthException', fbtrace_id: expect.any(String) });
  });

  it('refuses a missing or wrong token with 401 and Graph error 190', async () => {
    const answer = await post(
      '/123/messages',
      { messaging_product: 'whatsapp', to: '1555', type: 'text', text: { body: 'x' } },
      'nope',
    );
    expect(answer.status).toBe(401);
    expect(answer.body.error).toMatchObject({ code: 190 });
    const bare = await request(`${graph.baseUrl}/123`, { method: 'GET' });
    expect(bare.statusCode).toBe(401);
    await bare.body.dump();
  });

  it('answers an unknown path with a Graph error', async () => {
    const answer = await post('/123/unknown', {});
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 2500 });
  });

  it('fails the next N sends with the given error, then recovers', async () => {
    graph.failNextSends(2, {
      status: 400,
      code: 131056,
      message: 'pair rate limit hit',
      subcode: 2494011,
      details: 'slow down',
    });
    const send = () =>
      post('/123/messages', { messaging_product: 'whatsapp', to: '1555', type: 'text', text: { body: 'x' } });
    const [first, second, third] = [await send(), await send(), await send()];
    expect(first.body.error).toMatchObject({
      code: 131056,
      message: 'pair rate limit hit',
      error_subcode: 2494011,
      error_data: { messaging_product: 'whatsapp', details: 'slow down' },
    });
    expect(second.status).toBe(400);
    expect(third.status).toBe(200);
  });
});

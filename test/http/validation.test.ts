import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertContact, insertConversation } from '../helpers/factories.ts';
import { adminHeaders, createTenant, type Tenant } from '../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Input the schemas let through but the database refuses (a UUID written as a URN, a NUL character,
 * the year 0) answers 400 before it reaches the database, never 500, and changes nothing.
 */
let t: TestApp;
let tenant: Tenant;
let contactId: string;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  const contact = await insertContact(t.database.db, tenant.businessId, {
    phone_number: '5511988887777',
    first_name: 'Ada',
  });
  await insertConversation(t.database.db, tenant.businessId, contact.id);
  contactId = contact.id;
});
afterAll(() => t.close());

const P = '/external/v2';
const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({
    method,
    url,
    headers: tenant.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

function expectValidationError(res: { statusCode: number; json: () => { error: { code: string } } }, label: string) {
  expect(res.statusCode, label).toBe(400);
  expect(res.json().error.code, label).toBe('validation_error');
}

describe('UUIDs', () => {
  it('takes a UUID in its plain form only: urn:uuid:... is refused', async () => {
    const urn = `urn:uuid:${contactId}`;
    const cases: [string, Promise<Awaited<ReturnType<typeof call>>>][] = [
      ['GET contact', call('GET', `${P}/contacts/${urn}`)],
      ['PATCH contact', call('PATCH', `${P}/contacts/${urn}`, { name: 'X' })],
      ['GET contact messages', call('GET', `${P}/contacts/${urn}/messages`)],
      ['GET message status', call('GET', `${P}/messages/status/${urn}`)],
      ['merge', call('POST', `${P}/contacts/merge`, { survivor_id: urn, loser_id: contactId })],
      [
        'send',
        call('POST', `${P}/messages/send`, {
          to: '5511988887777',
          from: 'whatsapp',
          type: 'text',
          content: { text: 'hi' },
          channel_uuid: urn,
        }),
      ],
    ];
    for (const [label, pending] of cases) expectValidationError(await pending, label);
    expect((await call('GET', `${P}/contacts/${contactId}`)).json().contact.first_name).toBe('Ada');
  });
});

describe('unions of constants', () => {
  it('answer a value outside them with one detail that lists the allowed values, on every route and API', async () => {
    const merge = await call('POST', `${P}/contacts/merge`, {
      survivor_id: contactId,
      loser_id: contactId,
      field_choices: { email: 'both' },
    });
    expectValidationError(merge, 'merge');
    expect(merge.json().error.details).toEqual([
      {
        location: 'body',
        path: '/field_choices/email',
        message: 'must be one of "survivor", "loser"',
        allowed: ['survivor', 'loser'],
      },
    ]);
    const channel = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/channels`,
      headers: adminHeaders,
      payload: { type: 7, identifier: '15550000000' },
    });
    expectValidationError(channel, 'channel');
    const [detail] = channel.json().error.details;
    expect(channel.json().error.details).toHaveLength(1);
    expect(detail).toMatchObject({ location: 'body', path: '/type', allowed: expect.arrayContaining(['whatsapp']) });
    expect(detail.message).toMatch(/^must be one of "whatsapp", /);
  });
});

describe('the NUL character', () => {
  it('is refused in a JSON body, with the path of the value or key holding it, and nothing is stored', async () => {
    const cases: [string, 'POST' | 'PATCH', string, unknown, string][] = [
      ['create', 'POST', `${P}/contacts`, { external_id: 'nul-1', first_name: 'a\u0000b' }, '/first_name'],
      ['update name', 'PATCH', `${P}/contacts/${contactId}`, { name: 'a\u0000 b' }, '/name'],
      [
        'update custom field',
        'PATCH',
        `${P}/contacts/${contactId}`,
        { custom_fields: { plan: 'gold\u0000' } },
        '/custom_fields/plan',
      ],
      [
        'update custom field key',
        'PATCH',
        `${P}/contacts/${contactId}`,
        { custom_fields: { ['pl\u0000an']: 'gold' } },
        '/custom_fields/pl\u0000an',
      ],
      ['update tags', 'PATCH', `${P}/contacts/${contactId}`, { tags: ['ok', 'a\u0000'] }, '/tags/1'],
    ];
    for (const [label, method, url, payload, path] of cases) {
      const res = await call(method, url, payload);
      expectValidationError(res, label);
      expect(res.json().error.details, label).toEqual([
        { location: 'body', path, message: 'contains the NUL character (\\u0000)' },
      ]);
    }
    expect((await call('GET', `${P}/contacts?external_id=nul-1`)).json().results).toEqual([]);
    const read = (await call('GET', `${P}/contacts/${contactId}`)).json();
    expect(read.contact.first_name).toBe('Ada');
    // The escape of a backslash followed by "u0000" is text, not a NUL.
    const literal = await t.app.inject({
      method: 'POST',
      url: `${P}/contacts`,
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload: '{"external_id":"nul-2","first_name":"a\\\\u0000b"}',
    });
    expect(literal.statusCode).toBe(201);
    expect(literal.json().contact.first_name).toBe('a\\u0000b');
  });

  it('refuses lone surrogates and nesting deeper than 64 levels in a body, on the public and the operator API', async () => {
    // Written as text: JSON.stringify itself cannot write it (its stack overflows).
    const deep = `${'['.repeat(5000)}1${']'.repeat(5000)}`;
    const cases: [string, string, unknown, { path: string; message: RegExp }][] = [
      [
        'surrogate value',
        `${P}/contacts`,
        { external_id: 'sur-1', custom_fields: { a: 'x\ud800' } },
        { path: '/custom_fields/a', message: /lone surrogate/ },
      ],
      [
        'surrogate key',
        `${P}/contacts`,
        { external_id: 'sur-2', custom_fields: { ['\udc00']: 'x' } },
        { path: '/custom_fields/\udc00', message: /lone surrogate/ },
      ],
      [
        'deep contact field',
        `${P}/contacts`,
        `{"external_id":"deep-1","custom_fields":{"a":${deep}}}`,
        { path: expect.stringMatching(/^\/custom_fields\/a(\/0)+$/), message: /deeper than 64/ },
      ],
      [
        'deep agent config',
        `/admin/v1/businesses/${tenant.businessId}/agents`,
        `{"name":"a","data":{"x":${deep}}}`,
        { path: expect.any(String), message: /deeper than 64/ },
      ],
      [
        'infinite number',
        `${P}/contacts`,
        '{"external_id":"num-1","custom_fields":{"a":1e400}}',
        { path: '/custom_fields/a', message: /number out of range/ },
      ],
      [
        'huge number',
        `${P}/contacts`,
        '{"external_id":"num-2","custom_fields":{"a":-1e308}}',
        { path: '/custom_fields/a', message: /number out of range/ },
      ],
      [
        'tiny number',
        `/admin/v1/businesses/${tenant.businessId}/agents`,
        '{"name":"a","data":{"x":[1, 5e-324]}}',
        { path: '/data/x/1', message: /number out of range/ },
      ],
      // Below 5e-324 a number reads as 0: its digits say it was not.
      [
        'underflowing number',
        `${P}/contacts`,
        '{"external_id":"num-4","custom_fields":{"customer_id":1e-400}}',
        { path: '/custom_fields/customer_id', message: /number out of range/ },
      ],
      [
        'underflowing fraction with a huge exponent',
        `${P}/search/item`,
        '{"collection_id":"01900000-0000-7000-8000-000000000000","external_id":"n","item":{"a/b":[0, 0.1e-999999]}}',
        { path: '/item/a~1b/1', message: /number out of range/ },
      ],
      [
        'underflowing long fraction',
        `${P}/contacts`,
        `{"external_id":"num-5","custom_fields":{"a":0.${'0'.repeat(400)}1}}`,
        { path: '/custom_fields/a', message: /number out of range/ },
      ],
      // Above 2^53 a double does not hold every integer: this one would be kept as ...680.
      [
        'inexact integer',
        `${P}/contacts`,
        '{"external_id":"num-3","custom_fields":{"a":123456789012345678}}',
        { path: '/custom_fields/a', message: /number out of range/ },
      ],
      [
        'first inexact integer',
        `${P}/search/item`,
        '{"collection_id":"01900000-0000-7000-8000-000000000000","external_id":"n","item":{"n":-9007199254740992}}',
        { path: '/item/n', message: /number out of range/ },
      ],
    ];
    for (const [label, url, payload, detail] of cases) {
      const headers = {
        ...(url.startsWith('/admin') ? adminHeaders : tenant.headers),
        'content-type': 'application/json',
      };
      const res = await t.app.inject({
        method: 'POST',
        url,
        headers,
        payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
      });
      expectValidationError(res, label);
      expect(res.json().error.details, label).toEqual([
        { location: 'body', path: detail.path, message: expect.stringMatching(detail.message) },
      ]);
    }
    // Numbers in range, and 0 in any spelling, are stored as sent.
    const numbers = await t.app.inject({
      method: 'POST',
      url: `${P}/contacts`,
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload:
        '{"external_id":"num-ok","custom_fields":{"a":9007199254740991,"b":-1e-20,"c":-0.0,"d":123456789012345,"e":-9.007199254740991e15,"f":0e-500,"g":-0.000e-1000}}',
    });
    expect(numbers.statusCode, numbers.body).toBe(201);
    const row = await t.database.db
      .selectFrom('contacts')
      .select('custom_fields')
      .where('id', '=', numbers.json().contact.id)
      .executeTakeFirstOrThrow();
    expect(row.custom_fields).toEqual({
      a: 9007199254740991,
      b: -1e-20,
      c: 0,
      d: 123456789012345,
      e: -9007199254740991,
      f: 0,
      g: 0,
    });
    // A surrogate pair is a character like any other.
    const pair = await call('POST', `${P}/contacts`, { external_id: 'pair-1', first_name: '😀' });
    expect(pair.statusCode).toBe(201);
    expect(pair.json().contact.first_name).toBe('😀');
  });

  it('a request the HTTP parser refuses gets the error body too: 431 over 16 KiB of URL and headers, 400 when malformed', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const long = await fetch(`${address}${P}/contacts?email=${'a'.repeat(20_000)}`, { headers: tenant.headers });
    expect(long.status).toBe(431);
    expect(await long.json()).toEqual({
      error: { code: 'request_header_fields_too_large', message: expect.stringContaining('16 KiB') },
    });
    const { connect } = await import('node:net');
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(address).port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).error.code).toBe('validation_error');
  });

  it('a URL the router cannot read answers 400 with the error body', async () => {
    for (const url of [`${P}/agents/${'a'.repeat(201)}`, `${P}/agents/%E0%A4%A`, `${P}/contacts/%ZZ`]) {
      const res = await t.app.inject({ method: 'GET', url, headers: tenant.headers });
      expectValidationError(res, url.slice(0, 40));
      expect(res.json().error.details[0]).toMatchObject({ location: 'params' });
    }
  });

  it('is refused in a query string and in a path', async () => {
    expectValidationError(await call('GET', `${P}/contacts?external_id=a%00b`), 'search');
    expectValidationError(await call('GET', `${P}/conversations?field_key=plan&field_value=a%00`), 'lookup');
    expectValidationError(await call('GET', `${P}/contacts/a%00b`), 'path');
    expectValidationError(
      await t.app.inject({
        method: 'GET',
        url: `/admin/v1/businesses/${tenant.businessId}/channels?x=%00`,
        headers: adminHeaders,
      }),
      'operator API',
    );
  });
});

describe('requests without a body', () => {
  it('are an empty object where every field is optional, and name the required fields elsewhere', async () => {
    const url = `/admin/v1/businesses/${tenant.businessId}/api-keys`;
    for (const headers of [adminHeaders, { ...adminHeaders, 'content-type': 'application/json' }]) {
      const res = await t.app.inject({ method: 'POST', url, headers });
      expect(res.statusCode).toBe(201);
      expect(res.json().api_key.name).toBe('API key');
    }
    const send = await t.app.inject({ method: 'POST', url: `${P}/messages/send`, headers: tenant.headers });
    expectValidationError(send, 'send');
    expect(send.json().error.details[0].message).toMatch(/required property/);
  });
});

describe('dates', () => {
  it('refuses the year 0, which PostgreSQL has not', async () => {
    expectValidationError(
      await call('GET', `${P}/messages?since=0000-01-01T00:00:00Z&until=0000-01-05T00:00:00Z`),
      'messages',
    );
    expectValidationError(
      await call('GET', `${P}/events?since=0000-12-31T00:00:00Z&until=0001-01-05T00:00:00Z`),
      'events',
    );
    expect((await call('GET', `${P}/messages?since=0001-01-01T00:00:00Z&until=0001-01-05T00:00:00Z`)).statusCode).toBe(
      200,
    );
  });

  it('refuses instants past the year 9999 once their offset is applied', async () => {
    const q = (since: string, until: string) =>
      `?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`;
    for (const path of ['messages', 'events']) {
      expectValidationError(
        await call('GET', `${P}/${path}${q('9999-12-31T20:00:00Z', '9999-12-31T23:00:00-10:00')}`),
        path,
      );
      expectValidationError(
        await call('GET', `${P}/${path}${q('9999-12-31T00:00:00-23:00', '9999-12-31T23:59:59-23:59')}`),
        path,
      );
      expect(
        (await call('GET', `${P}/${path}${q('9999-12-30T00:00:00Z', '9999-12-31T23:59:59.999999Z')}`)).statusCode,
        path,
      ).toBe(200);
    }
  });

  it('imports only timestamps PostgreSQL stores and reads back in ISO form (years 1 to 9999 in UTC)', async () => {
    const contactLine = (id: string, createdAt: string) =>
      JSON.stringify({
        type: 'contact',
        id,
        first_name: 'T',
        last_name: '',
        email: null,
        phone_number: null,
        external_id: `ts-${id}`,
        tags: [],
        custom_fields: {},
        is_test: false,
        created_at: createdAt,
      });
    const ids = [
      '01900000-0000-7000-8000-00000000a001',
      '01900000-0000-7000-8000-00000000a002',
      '01900000-0000-7000-8000-00000000a003',
      '01900000-0000-7000-8000-00000000a004',
    ];
    const body = [
      contactLine(ids[0], '0001-01-01T00:00:00+14:00'),
      contactLine(ids[1], '9999-12-31T23:59:59.9999999Z'),
      contactLine(ids[2], '9999-12-31T23:59:59.999999Z'),
      contactLine(ids[3], '0001-01-01T00:00:00-01:00'),
    ].join('\n');
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/import`,
      headers: { ...adminHeaders, 'content-type': 'application/x-ndjson' },
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().imported.contacts).toBe(2);
    expect(res.json().errors.map((e: { line: number }) => e.line)).toEqual([1, 2]);
    for (const id of ids.slice(2)) expect((await call('GET', `${P}/contacts/${id}`)).statusCode).toBe(200);
  });

  it('refuses a day the calendar has not, rather than rolling it over', async () => {
    for (const since of ['2026-02-30T00:00:00Z', '2026-04-31', '2026-13-01', '2026-00-10', '2025-02-29']) {
      expectValidationError(await call('GET', `${P}/events?since=${since}&until=2026-03-05T00:00:00Z`), since);
    }
    expect((await call('GET', `${P}/events?since=2028-02-29T00:00:00Z&until=2028-03-05T00:00:00Z`)).statusCode).toBe(
      200,
    );
  });

  it('reads instants before 1970 with their microseconds', async () => {
    const res = await call('GET', `${P}/messages?since=1969-12-31T23:59:59.123456Z&until=1970-01-02T00:00:00Z&limit=1`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ messages: [], next_cursor: null });
  });
});

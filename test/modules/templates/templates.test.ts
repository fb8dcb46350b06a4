import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let acme: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  acme = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const url = (bid: string, id?: string) => `/admin/v1/businesses/${bid}/templates${id ? `/${id}` : ''}`;
const create = (payload: unknown, bid = acme.businessId) =>
  t.app.inject({ method: 'POST', url: url(bid), headers: adminHeaders, payload: payload as object });

let seq = 0;
const name = () => `tpl_${(seq += 1)}`;

describe('POST /admin/v1/businesses/:bid/templates', () => {
  it('creates a positional template with buttons and lists its variables in order', async () => {
    const res = await create({
      name: 'order_update',
      language: 'en_US',
      category: 'UTILITY',
      body: 'Hi {{1}}, order {{2}} ships {{3}}. Thanks {{1}}!',
      header: 'Your order',
      footer: 'Acme Inc',
      buttons: [
        { type: 'url', text: 'Track', url: 'https://acme.test/track/{{1}}' },
        { type: 'quick_reply', text: 'Stop' },
        { type: 'phone_number', text: 'Call us', phone_number: '+14155550123' },
      ],
    });
    expect(res.statusCode).toBe(201);
    const { template } = res.json();
    expect(template).toMatchObject({
      name: 'order_update',
      language: 'en_US',
      category: 'UTILITY',
      header: 'Your order',
      footer: 'Acme Inc',
      channel_id: null,
      variables: ['1', '2', '3'],
      buttons: [
        { type: 'url', text: 'Track', url: 'https://acme.test/track/{{1}}' },
        { type: 'quick_reply', text: 'Stop' },
        { type: 'phone_number', text: 'Call us', phone_number: '+14155550123' },
      ],
    });
    expect(template.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(template.created_at).toMatch(/\.\d{6}Z$/);

    const read = await t.app.inject({ method: 'GET', url: url(acme.businessId, template.id), headers: adminHeaders });
    expect(read.statusCode).toBe(200);
    expect(read.json().template).toEqual(template);
  });

  it('creates a named template; variables follow first appearance', async () => {
    const res = await create({
      name: name(),
      language: 'es',
      body: 'Hola {{first_name}}, tu cita es el {{date}}. {{first_name}}!',
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().template).toMatchObject({
      variables: ['first_name', 'date'],
      buttons: [],
      header: null,
      footer: null,
      category: null,
    });
  });

  it('accepts a body without placeholders', async () => {
    const res = await create({ name: name(), language: 'en', body: 'Hello there' });
    expect(res.statusCode).toBe(201);
    expect(res.json().template.variables).toEqual([]);
  });

  it.each([
    ['mixed placeholders', { body: 'Hi {{1}} and {{name}}' }, 'mixes'],
    ['a gap in positional numbers', { body: 'Hi {{1}} and {{3}}' }, 'without gaps'],
    ['positional numbers not starting at 1', { body: 'Hi {{2}}' }, 'without gaps'],
    ['a malformed placeholder', { body: 'Hi {{ first name }}' }, 'malformed placeholder'],
    ['an upper-case placeholder', { body: 'Hi {{Name}}' }, 'malformed placeholder'],
    ['a placeholder in the header', { body: 'x', header: 'Hi {{1}}' }, 'header cannot hold placeholders'],
    ['a placeholder in the footer', { body: 'x', footer: '{{1}}' }, 'footer cannot hold placeholders'],
    [
      'two placeholders in a URL button',
      { body: 'x', buttons: [{ type: 'url', text: 'Go', url: 'https://a.test/{{1}}/{{1}}' }] },
      'at most one placeholder',
    ],
    [
      '{{2}} in a URL button',
      { body: 'x', buttons: [{ type: 'url', text: 'Go', url: 'https://a.test/{{2}}' }] },
      'at most one placeholder',
    ],
    [
      'a URL placeholder not at the end',
      { body: 'x', buttons: [{ type: 'url', text: 'Go', url: 'https://a.test/{{1}}/x' }] },
      'must end',
    ],
    [
      'three URL buttons',
      { body: 'x', buttons: Array(3).fill({ type: 'url', text: 'Go', url: 'https://a.test/' }) },
      'at most 2 URL',
    ],
    [
      'two phone buttons',
      { body: 'x', buttons: Array(2).fill({ type: 'phone_number', text: 'Call', phone_number: '14155550123' }) },
      'at most 1 phone',
    ],
  ])('refuses %s with 400', async (_what, fields, message) => {
    const res = await create({ name: name(), language: 'en', ...fields });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
    expect(res.json().error.message).toContain(message);
  });

  it.each([
    ['an unknown field', { body: 'x', extra: 1 }],
    ['a missing body', {}],
    ['a wrong type', { body: 5 }],
    ['an upper-case name', { name: 'Welcome', body: 'x' }],
    ['a bad language', { language: 'english', body: 'x' }],
    ['an unknown category', { category: 'PROMO', body: 'x' }],
    ['a body over 1024 characters', { body: 'a'.repeat(1025) }],
    ['a header over 60 characters', { body: 'x', header: 'h'.repeat(61) }],
    ['more than 10 buttons', { body: 'x', buttons: Array(11).fill({ type: 'quick_reply', text: 'Ok' }) }],
    ['an unknown button type', { body: 'x', buttons: [{ type: 'copy_code', text: 'Ok' }] }],
    ['a button label over 25 characters', { body: 'x', buttons: [{ type: 'quick_reply', text: 'x'.repeat(26) }] }],
    [
      'a URL button that is not http',
      { body: 'x', buttons: [{ type: 'url', text: 'Go', url: 'javascript:alert(1)' }] },
    ],
    ['an unknown button field', { body: 'x', buttons: [{ type: 'quick_reply', text: 'Ok', url: 'https://a.test' }] }],
    ['a bad channel id', { body: 'x', channel_id: 'nope' }],
  ])('refuses %s with 400', async (_what, fields) => {
    const res = await create({ name: name(), language: 'en', ...fields });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('refuses malformed JSON with 400', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: url(acme.businessId),
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 409 for a second template of the same name and language; another language is fine', async () => {
    const body = { name: 'welcome', language: 'en', body: 'Welcome!' };
    expect((await create(body)).statusCode).toBe(201);
    const again = await create({ ...body, body: 'Welcome again' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('conflict');
    expect((await create({ ...body, language: 'pt_BR' })).statusCode).toBe(201);
    // Names are per business.
    expect((await create(body, other.businessId)).statusCode).toBe(201);
  });

  it('answers 404 for a channel of another business or none', async () => {
    const res = await create({ name: name(), language: 'en', body: 'x', channel_id: newId() });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  });

  it('answers 404 for an unknown business and 401 without the operator token', async () => {
    expect((await create({ name: name(), language: 'en', body: 'x' }, newId())).statusCode).toBe(404);
    const res = await t.app.inject({
      method: 'POST',
      url: url(acme.businessId),
      payload: { name: name(), language: 'en', body: 'x' },
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('GET and DELETE templates', () => {
  it("lists the business's templates only, and deletes one", async () => {
    const mine = (await create({ name: 'to_delete', language: 'en', body: 'bye' })).json().template;
    const theirs = (await create({ name: 'theirs', language: 'en', body: 'x' }, other.businessId)).json().template;

    const list = await t.app.inject({ method: 'GET', url: url(acme.businessId), headers: adminHeaders });
    expect(list.statusCode).toBe(200);
    const ids = list.json().templates.map((x: { id: string }) => x.id);
    expect(ids).toContain(mine.id);
    expect(ids).not.toContain(theirs.id);

    const limited = await t.app.inject({
      method: 'GET',
      url: `${url(acme.businessId)}?limit=1`,
      headers: adminHeaders,
    });
    expect(limited.json().templates).toHaveLength(1);

    // Another business's template is not found through this business.
    expect(
      (await t.app.inject({ method: 'GET', url: url(acme.businessId, theirs.id), headers: adminHeaders })).statusCode,
    ).toBe(404);
    expect(
      (await t.app.inject({ method: 'DELETE', url: url(acme.businessId, theirs.id), headers: adminHeaders }))
        .statusCode,
    ).toBe(404);

    const del = await t.app.inject({ method: 'DELETE', url: url(acme.businessId, mine.id), headers: adminHeaders });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({ success: true });
    expect(
      (await t.app.inject({ method: 'GET', url: url(acme.businessId, mine.id), headers: adminHeaders })).statusCode,
    ).toBe(404);
    expect(
      (await t.app.inject({ method: 'DELETE', url: url(acme.businessId, mine.id), headers: adminHeaders })).statusCode,
    ).toBe(404);
    expect(
      (await t.app.inject({ method: 'GET', url: url(other.businessId, theirs.id), headers: adminHeaders })).statusCode,
    ).toBe(200);
  });

  it('answers 400 for a malformed id and an over-limit list', async () => {
    expect(
      (await t.app.inject({ method: 'GET', url: url(acme.businessId, 'abc'), headers: adminHeaders })).statusCode,
    ).toBe(400);
    expect(
      (await t.app.inject({ method: 'GET', url: `${url(acme.businessId)}?limit=501`, headers: adminHeaders }))
        .statusCode,
    ).toBe(400);
  });
});

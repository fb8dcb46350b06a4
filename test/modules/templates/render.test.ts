import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Template } from '../../../src/modules/templates/templates.schemas.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let acme: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  acme = await createTenant(t.app);
});
afterAll(() => t.close());

/** A template made through the operator API and read back through the service, as the send helper does. */
async function template(payload: object): Promise<Template> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${acme.businessId}/templates`,
    headers: adminHeaders,
    payload,
  });
  expect(res.statusCode).toBe(201);
  const found = await t.app.services.templates.get(acme.businessId, res.json().template.id);
  if (!found) throw new Error('template not found');
  return found;
}

function renderError(fn: () => unknown): { kind: string; code: string; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { kind: string; code: string; message: string };
  }
  throw new Error('render did not throw');
}

describe('TemplatesService.render', () => {
  it('fills positional variables from numeric keys and ignores other keys', async () => {
    const tpl = await template({ name: 'positional', language: 'en_US', body: 'Hi {{1}}, your code is {{2}}.' });
    const rendered = t.app.services.templates.render(tpl, {
      byKey: { 2: '4711', 1: 'Ada', first_name: 'ignored', phone: '5491155' },
    });
    expect(rendered).toEqual({
      content: {
        kind: 'template',
        name: 'positional',
        languageCode: 'en_US',
        bodyParameters: [{ text: 'Ada' }, { text: '4711' }],
      },
      text: 'Hi Ada, your code is 4711.',
    });
  });

  it('fills named variables from named keys, with their names', async () => {
    const tpl = await template({
      name: 'named',
      language: 'es',
      body: 'Hola {{first_name}}, el {{date}}. Chau {{first_name}}',
    });
    const rendered = t.app.services.templates.render(tpl, {
      byKey: { date: 'lunes', first_name: 'Ana', 1: 'ignored' },
    });
    expect(rendered.content.bodyParameters).toEqual([
      { name: 'first_name', text: 'Ana' },
      { name: 'date', text: 'lunes' },
    ]);
    expect(rendered.text).toBe('Hola Ana, el lunes. Chau Ana');
  });

  it('sends no parameters for a template without variables', async () => {
    const tpl = await template({ name: 'plain', language: 'en', body: 'Hello' });
    expect(t.app.services.templates.render(tpl, { byKey: { 1: 'x' } })).toEqual({
      content: { kind: 'template', name: 'plain', languageCode: 'en' },
      text: 'Hello',
    });
  });

  it('refuses a missing or empty variable with 400 template_variable_missing naming it', async () => {
    const tpl = await template({ name: 'two_vars', language: 'en', body: '{{1}} and {{2}}' });
    const missing = renderError(() => t.app.services.templates.render(tpl, { byKey: { 1: 'a' } }));
    expect(missing).toMatchObject({ kind: 'invalid', code: 'template_variable_missing' });
    expect(missing.message).toContain('2');
    const named = await template({ name: 'named_missing', language: 'en', body: 'Hi {{first_name}}' });
    const empty = renderError(() => t.app.services.templates.render(named, { byKey: { first_name: '  ' } }));
    expect(empty).toMatchObject({ kind: 'invalid', code: 'template_variable_missing' });
    expect(empty.message).toContain('first_name');
    // What every object inherits fills nothing: a variable named `constructor` is missing too.
    const inherited = await template({
      name: 'inherited_names',
      language: 'en',
      body: 'Hi {{constructor}} {{to_string}}',
    });
    expect(renderError(() => t.app.services.templates.render(inherited, { byKey: {} }))).toMatchObject({
      kind: 'invalid',
      code: 'template_variable_missing',
      message: 'template variable constructor has no value',
    });
    expect(t.app.services.templates.render(inherited, { byKey: { constructor: 'Ada', to_string: 1 } }).text).toBe(
      'Hi Ada 1',
    );
  });

  it('fills a dynamic URL button from `buttons`', async () => {
    const tpl = await template({
      name: 'with_buttons',
      language: 'en',
      body: 'Order {{1}}',
      buttons: [
        { type: 'quick_reply', text: 'Stop' },
        { type: 'url', text: 'Static', url: 'https://acme.test/help' },
        { type: 'url', text: 'Track', url: 'https://acme.test/t/{{1}}' },
      ],
    });
    const rendered = t.app.services.templates.render(tpl, {
      byKey: { 1: 'A-1' },
      buttons: [{ index: 2, sub_type: 'url', text: 'A-1?x=1' }],
    });
    expect(rendered.content).toEqual({
      kind: 'template',
      name: 'with_buttons',
      languageCode: 'en',
      bodyParameters: [{ text: 'A-1' }],
      urlButtons: [{ index: '2', text: 'A-1?x=1' }],
    });

    // A URL button with a placeholder needs its value.
    const noValue = renderError(() => t.app.services.templates.render(tpl, { byKey: { 1: 'A-1' } }));
    expect(noValue).toMatchObject({ kind: 'invalid', code: 'template_variable_missing' });
    expect(noValue.message).toContain('button 2');
    // A value for a button without a placeholder, a quick reply, a missing button, or twice: 400.
    for (const buttons of [
      [{ index: 1, sub_type: 'url' as const, text: 'x' }],
      [{ index: 0, sub_type: 'url' as const, text: 'x' }],
      [{ index: 7, sub_type: 'url' as const, text: 'x' }],
      [
        { index: 2, sub_type: 'url' as const, text: 'x' },
        { index: 2, sub_type: 'url' as const, text: 'y' },
      ],
    ]) {
      expect(renderError(() => t.app.services.templates.render(tpl, { byKey: { 1: 'A-1' }, buttons }))).toMatchObject({
        kind: 'invalid',
        code: 'template_button_invalid',
      });
    }
  });

  it('get() answers undefined for an unknown template or one of another business', async () => {
    const tpl = await template({ name: 'mine', language: 'en', body: 'x' });
    const other = await createTenant(t.app, 'Other');
    expect(await t.app.services.templates.get(other.businessId, tpl.id)).toBeUndefined();
    expect(await t.app.services.templates.get(acme.businessId, tpl.id)).toEqual(tpl);
  });
});

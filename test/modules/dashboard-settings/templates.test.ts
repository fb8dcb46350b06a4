import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { call, refused, settingsFixture, type SettingsFixture } from './settings-fixture.ts';

let f: SettingsFixture;
beforeAll(async () => {
  f = await settingsFixture();
});
afterAll(() => f.t.close());

const welcome = { name: 'welcome', language: 'en', body: 'Hello {{1}}, welcome to {{2}}' };

describe('template settings', () => {
  it('creates, lists, replaces and deletes a template with the templates module’s rules', async () => {
    const created = await call(f.t.app, f.admin, 'POST', '/templates', welcome);
    expect(created.statusCode, created.body).toBe(201);
    const { template } = created.json();
    expect(template).toMatchObject({ name: 'welcome', variables: ['1', '2'], buttons: [] });

    const listed = await call(f.t.app, f.owner, 'GET', '/templates');
    expect(listed.json().templates).toEqual([template]);

    const replaced = await call(f.t.app, f.admin, 'PUT', `/templates/${template.id}`, {
      ...welcome,
      body: 'Hi {{first_name}}',
      footer: 'Acme',
    });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json().template).toMatchObject({
      id: template.id,
      body: 'Hi {{first_name}}',
      variables: ['first_name'],
      footer: 'Acme',
      created_at: template.created_at,
    });

    await call(f.t.app, f.admin, 'POST', '/templates', { ...welcome, name: 'other' });
    await refused(
      call(f.t.app, f.admin, 'PUT', `/templates/${template.id}`, { ...welcome, name: 'other' }),
      409,
      'conflict',
    );
    await refused(call(f.t.app, f.admin, 'POST', '/templates', { ...welcome, name: 'other' }), 409, 'conflict');

    const deleted = await call(f.t.app, f.admin, 'DELETE', `/templates/${template.id}`);
    expect(deleted.statusCode).toBe(204);
    await refused(call(f.t.app, f.admin, 'DELETE', `/templates/${template.id}`), 404, 'not_found');
  });

  it('refuses bad input and unknown fields with 400', async () => {
    for (const body of [
      { ...welcome, name: 'Has Spaces' },
      { ...welcome, body: 'Hi {{1}} and {{name}}' },
      { ...welcome, colour: 'red' },
      { ...welcome, buttons: [{ type: 'url', text: 'Go', url: 'ftp://x' }] },
      { name: 'x' },
    ]) {
      const res = await call(f.t.app, f.admin, 'POST', '/templates', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(['validation_error', 'template_invalid']).toContain(res.json().error.code);
    }
    await refused(call(f.t.app, f.admin, 'PUT', `/templates/not-a-uuid`, welcome), 400, 'validation_error');
  });

  it('keeps businesses apart: another business’s template or channel answers 404', async () => {
    const { template } = (
      await call(f.t.app, f.otherOwner, 'POST', '/templates', { ...welcome, name: 'theirs' })
    ).json();
    await refused(call(f.t.app, f.admin, 'PUT', `/templates/${template.id}`, welcome), 404, 'not_found');
    await refused(call(f.t.app, f.admin, 'DELETE', `/templates/${template.id}`), 404, 'not_found');
    expect((await call(f.t.app, f.admin, 'GET', '/templates')).body).not.toContain(template.id);
    await refused(
      call(f.t.app, f.admin, 'POST', '/templates', { ...welcome, name: 'x', channel_id: newId() }),
      404,
      'not_found',
    );
  });

  it('answers 403 to an agent', async () => {
    const { template } = (await call(f.t.app, f.admin, 'POST', '/templates', { ...welcome, name: 'agentless' })).json();
    await refused(call(f.t.app, f.agent, 'GET', '/templates'), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'POST', '/templates', { ...welcome, name: 'mine' }), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'PUT', `/templates/${template.id}`, welcome), 403, 'forbidden');
    await refused(call(f.t.app, f.agent, 'DELETE', `/templates/${template.id}`), 403, 'forbidden');
  });
});

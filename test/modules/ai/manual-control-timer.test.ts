import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiFixture, settle, waitUntil, type AiFixture } from './ai-helpers.ts';
import { conversationRow, eventsOfType, operate } from './timer-helpers.ts';

let f: AiFixture;
// One app for the file, each test with customers of its own. No model: the timer needs none, and no
// run answers the customers meanwhile.
beforeAll(async () => {
  f = await aiFixture({ llm: false });
});
afterAll(() => f.close());

/** The agent's manual_control_release_minutes. */
async function releaseAfter(minutes: number) {
  const res = await f.app.app.inject({
    method: 'PATCH',
    url: `/external/v2/agents/${f.agentId}`,
    headers: f.tenant.headers,
    payload: { agent: { inactivity_run_settings: { manual_control_release_minutes: minutes } } },
  });
  expect(res.statusCode).toBe(200);
}

describe('the manual-control timer', () => {
  it('returns the conversation to the agent after the configured time, with reason timer; not while pinned', async () => {
    await releaseAfter(0.02);
    await f.inbound('Hola', '34600000031');
    await f.inbound('Hola', '34600000032');
    const released = await f.conversationOf('34600000031');
    const pinned = await f.conversationOf('34600000032');
    await operate(f, released, 'manual-control', { active: true, reason: 'a person answers' });
    await operate(f, pinned, 'manual-control', { active: true, locked: true });
    await waitUntil(async () => !(await conversationRow(f, released)).manual_control);
    await settle(1500);
    expect(await eventsOfType(f, released, 'manual_control_released')).toEqual([
      { actor_type: 'system', agent_id: f.agentId, data: { reason: 'timer' } },
    ]);
    expect(await conversationRow(f, pinned)).toMatchObject({ manual_control: true, manual_control_locked: true });
    expect(await eventsOfType(f, pinned, 'manual_control_released')).toEqual([]);
    // Unpinned, it returns that long after the unpinning.
    await operate(f, pinned, 'manual-control', { locked: false });
    expect((await conversationRow(f, pinned)).manual_control).toBe(true);
    await waitUntil(async () => !(await conversationRow(f, pinned)).manual_control);
    expect((await eventsOfType(f, pinned, 'manual_control_released')).map((e) => e.data)).toEqual([
      { reason: 'timer' },
    ]);
  });

  it('counts from the newest activation, after a release by hand and a new take-over', async () => {
    await releaseAfter(0.05);
    await f.inbound('Hola', '34600000033');
    const conversationId = await f.conversationOf('34600000033');
    await operate(f, conversationId, 'manual-control', { active: true });
    await settle(1500);
    // Released by hand and taken again: 3 s from now, not from the first activation.
    await operate(f, conversationId, 'manual-control', { active: false });
    await operate(f, conversationId, 'manual-control', { active: true });
    await settle(2000);
    expect((await conversationRow(f, conversationId)).manual_control).toBe(true);
    await waitUntil(async () => !(await conversationRow(f, conversationId)).manual_control);
    const releases = await eventsOfType(f, conversationId, 'manual_control_released');
    expect(releases.map((e) => [e.actor_type, e.data.reason])).toEqual([
      ['system', 'dashboard'],
      ['system', 'timer'],
    ]);
  });
});

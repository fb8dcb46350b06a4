import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callStatus,
  incomingCall,
  recordingCallback,
  startFakeTwilioApi,
  twilioWebhook,
  type FakeTwilioApi,
} from '../../helpers/fake-twilio-api.ts';
import { startFakeLlmApi, type FakeLlmApi } from '../../helpers/fake-llm-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { until } from '../sending/sending.fixtures.ts';
import { newNumber } from '../sms/sms-helpers.ts';

const WEBHOOK = '/channels/twilio_voice/webhook';
const XML = '<?xml version="1.0" encoding="UTF-8"?>';

let t: TestApp;
let twilio: FakeTwilioApi;
let llm: FakeLlmApi;
let tenant: Tenant;
let recorder: { id: string; number: string };
let forwarder: { id: string; number: string; to: string };

async function createVoiceChannel(businessId: string, provider: Record<string, unknown>) {
  const number = newNumber();
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'voice',
      identifier: number,
      provider: {
        kind: 'twilio_voice',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        phone_number: number,
        api_base_url: twilio.baseUrl,
        ...provider,
      },
    },
  });
  return { res, number };
}

beforeAll(async () => {
  twilio = await startFakeTwilioApi();
  llm = await startFakeLlmApi();
  t = await buildTestApp({
    ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
    LLM_URL: llm.url,
    LLM_API_KEY: 'sk-test-key',
    LLM_TIMEOUT_SECONDS: '5',
  });
  tenant = await createTenant(t.app, 'Voice');
  const record = await createVoiceChannel(tenant.businessId, {
    mode: 'record',
    greeting: 'Thanks for calling Acme & Sons',
    max_recording_seconds: 60,
  });
  expect(record.res.statusCode, record.res.body).toBe(201);
  recorder = { id: record.res.json().channel.id as string, number: record.number };
  const to = newNumber();
  const forward = await createVoiceChannel(tenant.businessId, {
    mode: 'forward',
    forward_to: to,
    record_forwarded_calls: true,
  });
  expect(forward.res.statusCode, forward.res.body).toBe(201);
  forwarder = { id: forward.res.json().channel.id as string, number: forward.number, to };
  // Deliveries are written with the messages; where they go does not matter here.
  const hook = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
    headers: adminHeaders,
    payload: { event: 'message_created', url: 'http://127.0.0.1:9/hooks' },
  });
  expect(hook.statusCode).toBe(201);
});
afterAll(async () => {
  await t?.close();
  await twilio?.close();
  await llm?.close();
});

const db = () => t.database.db;
/** Posts form parameters to the webhook (with `query`), signed as Twilio signs them for the account. */
const post = (params: Record<string, string>, query = '', authToken = twilio.authToken) =>
  t.app.inject({
    method: 'POST',
    url: `${WEBHOOK}${query}`,
    ...twilioWebhook(`${PUBLIC_URL}${WEBHOOK}${query}`, params, authToken),
  });
const callOf = (sid: string) =>
  db().selectFrom('messages').selectAll().where('provider_message_id', '=', sid).executeTakeFirstOrThrow();
const countMessages = async () =>
  (await db().selectFrom('messages').select('id').where('business_id', '=', tenant.businessId).execute()).length;
const deliveriesOf = (id: string) =>
  db().selectFrom('webhook_deliveries').select(['event', 'payload']).where('message_id', '=', id).execute();
const eventsOf = async (id: string) =>
  (await db().selectFrom('domain_events').select('type').where('subject_id', '=', id).execute()).map((e) => e.type);
/** What each `message_changed` of a message says changed, in order. */
const changesOf = async (id: string) =>
  (
    await db()
      .selectFrom('domain_events')
      .select('data')
      .where('subject_id', '=', id)
      .where('type', '=', 'message_changed')
      .orderBy('id')
      .execute()
  ).map((e) => (e.data as { change: string }).change);
const callbackQuery = (event: string, number: string) => `?event=${event}&number=${encodeURIComponent(number)}`;

describe('Twilio Voice: a call recorded as a message', () => {
  const from = newNumber();
  const call = () => incomingCall({ accountSid: twilio.accountSid, from, to: recorder.number, sid: callSid });
  const callSid = `CA${randomBytes(16).toString('hex')}`;

  it('answers an incoming call with the greeting and a recording, and stores it as a voice message', async () => {
    const res = await post(call());
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/xml/);
    const callback = (event: string) =>
      `${PUBLIC_URL}${WEBHOOK}?event=${event}&amp;number=${encodeURIComponent(recorder.number)}`;
    expect(res.body).toBe(
      `${XML}<Response><Say>Thanks for calling Acme &amp; Sons</Say><Record maxLength="60" action="${callback('recorded')}" ` +
        `method="POST" recordingStatusCallback="${callback('recording')}" recordingStatusCallbackMethod="POST"/></Response>`,
    );

    const row = await callOf(callSid);
    expect(row).toMatchObject({
      business_id: tenant.businessId,
      channel: 'voice',
      channel_id: recorder.id,
      direction: 'inbound',
      sender_type: 'contact',
      type: 'voice',
      status: 'PENDING',
      sender_address: from,
      recipient_address: recorder.number.slice(1),
      metadata: { call_status: 'ringing', direction: 'inbound' },
    });
    const contact = await db()
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', row.contact_id)
      .executeTakeFirstOrThrow();
    expect(contact).toMatchObject({ phone_number: from.slice(1), business_id: tenant.businessId });
    const conversation = await db()
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', row.conversation_id)
      .executeTakeFirstOrThrow();
    expect(conversation).toMatchObject({ channel: 'voice', channel_id: recorder.id, contact_id: contact.id });
    const deliveries = await deliveriesOf(row.id);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ event: 'message_created', payload: { type: 'voice', channel: 'voice' } });

    // Twilio asking again for the same call gets the same instructions; nothing is stored twice.
    const again = await post(call());
    expect(again.body).toBe(res.body);
    expect(
      await db().selectFrom('messages').select('id').where('provider_message_id', '=', callSid).execute(),
    ).toHaveLength(1);
    expect(await deliveriesOf(row.id)).toHaveLength(1);
  });

  it('hangs up after the message, then moves the status and keeps the duration from the status callbacks', async () => {
    const recorded = await post(
      { ...call(), CallStatus: 'in-progress', RecordingDuration: '7' },
      callbackQuery('recorded', recorder.number),
    );
    expect(recorded.statusCode, recorded.body).toBe(200);
    expect(recorded.body).toBe(`${XML}<Response><Hangup/></Response>`);
    const ended = await callOf(callSid);
    expect(ended.status).toBe('RECEIVED');

    const status = (s: string, duration?: number) =>
      post(
        callStatus({ accountSid: twilio.accountSid, sid: callSid, status: s, from, to: recorder.number, duration }),
        '?event=status',
      );
    // Progress told late changes nothing; the end keeps the duration, told twice to no more effect.
    const late = await status('in-progress');
    expect(late.body).toBe(`${XML}<Response></Response>`);
    expect((await callOf(callSid)).metadata).toMatchObject({ call_status: 'in-progress' });
    for (let i = 0; i < 2; i++) expect((await status('completed', 42)).statusCode).toBe(200);
    const row = await callOf(callSid);
    expect(row).toMatchObject({ status: 'RECEIVED', metadata: { call_status: 'completed', duration_seconds: 42 } });
    expect((await eventsOf(row.id)).filter((e) => e === 'message_status_changed')).toHaveLength(1);
    // Each callback that told details of the call says so to the dashboards' live stream.
    expect(new Set(await changesOf(row.id))).toEqual(new Set(['details']));
  });

  it('stores the recording as the message media, fetched with the account credentials, and its transcript', async () => {
    const audio = randomBytes(3000);
    const recording = twilio.addRecording(audio);
    const params = recordingCallback({
      accountSid: twilio.accountSid,
      callSid,
      recordingSid: recording.sid,
      url: recording.url,
      duration: 7,
    });
    for (let i = 0; i < 2; i++) {
      const res = await post(params, callbackQuery('recording', recorder.number));
      expect(res.statusCode, res.body).toBe(200);
    }
    const row = await callOf(callSid);
    const media = () => db().selectFrom('media').selectAll().where('message_id', '=', row.id).execute();
    await until(async () => (await media()).every((m) => m.storage_key !== null));
    const [file, ...more] = await media();
    expect(more).toHaveLength(0);
    expect(file).toMatchObject({
      content_type: 'audio/mpeg',
      size_bytes: audio.length,
      filename: `${recording.sid}.mp3`,
    });
    const download = twilio.requests.find((r) => r.path.endsWith(`${recording.sid}.mp3`));
    expect(download?.headers.authorization).toBe(
      `Basic ${Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64')}`,
    );

    const transcript = `Transcript of ${recording.sid}.mp3, ${audio.length} bytes`;
    await until(async () => (await callOf(callSid)).text === transcript);
    expect((await callOf(callSid)).metadata).toMatchObject({
      transcript,
      recording_sid: recording.sid,
      recording_duration_seconds: 7,
      call_status: 'completed',
    });
    expect(llm.transcriptions).toHaveLength(1);
    expect(llm.transcriptions[0]).toMatchObject({ model: 'whisper-1', contentType: 'audio/mpeg' });
    expect(llm.transcriptions[0].bytes.equals(audio)).toBe(true);
    // The stored file is served through the messages API like any attachment.
    const listed = await t.app.inject({
      method: 'GET',
      url: `/external/v2/contacts/${row.contact_id}/messages`,
      headers: tenant.headers,
    });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.body).toContain(transcript);
    // The recording (told twice, added once) and the transcript each changed the message.
    const changes = (await changesOf(row.id)).filter((c) => c !== 'details');
    expect(changes).toEqual(['attachment', 'transcript']);
  });
});

describe('Twilio Voice: a forwarded call', () => {
  it('puts the call through to forward_to, recording it, and marks a forward not answered as ERROR', async () => {
    const from = newNumber();
    const params = incomingCall({ accountSid: twilio.accountSid, from, to: forwarder.number });
    const res = await post(params);
    expect(res.statusCode, res.body).toBe(200);
    const callback = (event: string) =>
      `${PUBLIC_URL}${WEBHOOK}?event=${event}&amp;number=${encodeURIComponent(forwarder.number)}`;
    expect(res.body).toBe(
      `${XML}<Response><Dial action="${callback('dialed')}" method="POST" record="record-from-answer" ` +
        `recordingStatusCallback="${callback('recording')}" recordingStatusCallbackMethod="POST">` +
        `<Number>${forwarder.to}</Number></Dial></Response>`,
    );
    const dialed = await post(
      { ...params, CallStatus: 'in-progress', DialCallStatus: 'no-answer', DialCallSid: `CA${'1'.repeat(32)}` },
      callbackQuery('dialed', forwarder.number),
    );
    expect(dialed.body).toBe(`${XML}<Response><Hangup/></Response>`);
    const missed = await callOf(params.CallSid);
    expect(missed).toMatchObject({ status: 'ERROR', metadata: { forward_status: 'no-answer' } });
    expect(missed.error).toContain('no-answer');
    // The call's own end comes after: its duration is kept, the status stays.
    const completed = callStatus({
      accountSid: twilio.accountSid,
      sid: params.CallSid,
      status: 'completed',
      from,
      to: forwarder.number,
      duration: 25,
    });
    expect((await post(completed, '?event=status')).statusCode).toBe(200);
    expect(await callOf(params.CallSid)).toMatchObject({
      status: 'ERROR',
      metadata: { call_status: 'completed', duration_seconds: 25 },
    });
  });

  it('ends a call the caller gave up on (canceled, busy) as ERROR from its status callback', async () => {
    const from = newNumber();
    const params = incomingCall({ accountSid: twilio.accountSid, from, to: recorder.number });
    expect((await post(params)).statusCode).toBe(200);
    const canceled = callStatus({
      accountSid: twilio.accountSid,
      sid: params.CallSid,
      status: 'canceled',
      from,
      to: recorder.number,
    });
    expect((await post(canceled, '?event=status')).statusCode).toBe(200);
    const row = await callOf(params.CallSid);
    expect(row).toMatchObject({ status: 'ERROR', metadata: { call_status: 'canceled' } });
    expect(row.error).toContain('canceled');
  });
});

describe('Twilio Voice: the AI agent', () => {
  it("starts no run for a call, though the channel's conversations get its agent", async () => {
    const agent = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/agents`,
      headers: adminHeaders,
      payload: { name: 'Sofia', system_prompt: 'You answer questions.', activation_rules: { debounce_seconds: 0 } },
    });
    expect(agent.statusCode, agent.body).toBe(201);
    const number = newNumber();
    const created = await createVoiceChannel(tenant.businessId, { mode: 'record' });
    expect(created.res.statusCode).toBe(201);
    const channelId = created.res.json().channel.id as string;
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${tenant.businessId}/channels/${channelId}`,
      headers: adminHeaders,
      payload: { agent_id: agent.json().agent.id },
    });
    expect(patch.statusCode, patch.body).toBe(200);
    const params = incomingCall({ accountSid: twilio.accountSid, from: number, to: created.number });
    expect((await post(params)).statusCode).toBe(200);
    const row = await callOf(params.CallSid);
    const conversation = await db()
      .selectFrom('conversations')
      .select('agent_id')
      .where('id', '=', row.conversation_id)
      .executeTakeFirstOrThrow();
    expect(conversation.agent_id).toBe(agent.json().agent.id);
    await t.app.services.domainEvents.dispatch();
    // No reply run; the agent's timers (a quiet conversation's sentiment) read the call as any message.
    const jobs = await db().selectFrom('outbox').select('kind').where('ref_id', '=', row.conversation_id).execute();
    expect(jobs.map((j) => j.kind)).not.toContain('ai_run');
    expect(jobs.length).toBeGreaterThan(0);
  });
});

describe('Twilio Voice: refusals', () => {
  it('refuses a wrong or missing signature, another account and an unknown number with 401, storing nothing', async () => {
    const before = await countMessages();
    const params = incomingCall({ accountSid: twilio.accountSid, from: newNumber(), to: recorder.number });
    expect((await post(params, '', 'not-the-auth-token')).statusCode).toBe(401);
    const unsigned = await t.app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(params).toString(),
    });
    expect(unsigned.statusCode).toBe(401);
    // The query is signed too: a callback's event changed after signing is refused.
    const signed = twilioWebhook(`${PUBLIC_URL}${WEBHOOK}?event=status`, params, twilio.authToken);
    const moved = await t.app.inject({ method: 'POST', url: `${WEBHOOK}?event=recorded`, ...signed });
    expect(moved.statusCode).toBe(401);
    expect((await post({ ...params, AccountSid: `AC${'0'.repeat(32)}` })).statusCode).toBe(401);
    expect((await post({ ...params, To: newNumber() })).statusCode).toBe(401);
    expect(await countMessages()).toBe(before);
  });

  it('answers 400 to a body that is not a Twilio voice notification, storing nothing', async () => {
    const before = await countMessages();
    expect((await post({ Hello: 'world' })).statusCode).toBe(400);
    const params = incomingCall({ accountSid: twilio.accountSid, from: newNumber(), to: recorder.number });
    expect((await post(params, '?event=nonsense')).statusCode).toBe(400);
    const { CallStatus: _, ...noStatus } = params;
    expect((await post(noStatus, '?event=status')).statusCode).toBe(400);
    const malformed = await t.app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    expect(malformed.statusCode).toBe(400);
    expect(await countMessages()).toBe(before);
  });

  it("keeps another business's channel to its own business", async () => {
    const other = await createTenant(t.app, 'Other voice');
    const theirs = await createVoiceChannel(other.businessId, { mode: 'record' });
    expect(theirs.res.statusCode).toBe(201);
    const params = incomingCall({ accountSid: twilio.accountSid, from: newNumber(), to: theirs.number });
    const res = await post(params);
    expect(res.body).toContain('<Say>Please leave a message after the tone.</Say>');
    expect(await callOf(params.CallSid)).toMatchObject({
      business_id: other.businessId,
      channel_id: theirs.res.json().channel.id,
    });
    // A callback naming our number cannot reach their call.
    const before = (await callOf(params.CallSid)).status;
    const status = callStatus({
      accountSid: twilio.accountSid,
      sid: params.CallSid,
      status: 'busy',
      from: params.From,
      to: recorder.number,
    });
    expect((await post(status, '?event=status')).statusCode).toBe(200);
    expect((await callOf(params.CallSid)).status).toBe(before);
  });

  it('refuses sends on a voice channel with 400 channel_receive_only', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: { to: newNumber(), from: 'voice', type: 'text', content: { text: 'hello' }, channel_uuid: recorder.id },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'channel_receive_only' });
  });

  it('refuses a forward channel without forward_to or another identifier than its number, and never shows the auth token', async () => {
    const { res } = await createVoiceChannel(tenant.businessId, { mode: 'forward' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([{ path: '/provider/forward_to' }]);
    // Its identifier is the number Twilio's calls name.
    const elsewhere = await createVoiceChannel(tenant.businessId, { mode: 'record', phone_number: newNumber() });
    expect(elsewhere.res.statusCode).toBe(400);
    expect(elsewhere.res.json().error.details).toEqual([{ path: '/identifier' }]);
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${tenant.businessId}/channels/${recorder.id}`,
      headers: adminHeaders,
      payload: { provider: { mode: 'forward' } },
    });
    expect(patch.statusCode).toBe(400);
    const shown = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${tenant.businessId}/channels/${recorder.id}`,
      headers: adminHeaders,
    });
    expect(shown.statusCode).toBe(200);
    expect(shown.body).not.toContain(twilio.authToken);
  });
});

describe('Twilio Voice without LLM_URL', () => {
  it('stores the recording and transcribes nothing', async () => {
    const bare = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
    try {
      const owner = await createTenant(bare.app, 'Voice without a model');
      const number = newNumber();
      const created = await bare.app.inject({
        method: 'POST',
        url: `/admin/v1/businesses/${owner.businessId}/channels`,
        headers: adminHeaders,
        payload: {
          type: 'voice',
          identifier: number,
          provider: {
            kind: 'twilio_voice',
            account_sid: twilio.accountSid,
            auth_token: twilio.authToken,
            phone_number: number,
            mode: 'record',
            api_base_url: twilio.baseUrl,
          },
        },
      });
      expect(created.statusCode, created.body).toBe(201);
      const send = (params: Record<string, string>, query = '') =>
        bare.app.inject({
          method: 'POST',
          url: `${WEBHOOK}${query}`,
          ...twilioWebhook(`${PUBLIC_URL}${WEBHOOK}${query}`, params, twilio.authToken),
        });
      const params = incomingCall({ accountSid: twilio.accountSid, from: newNumber(), to: number });
      expect((await send(params)).statusCode).toBe(200);
      const recording = twilio.addRecording(randomBytes(500));
      const callback = recordingCallback({
        accountSid: twilio.accountSid,
        callSid: params.CallSid,
        recordingSid: recording.sid,
        url: recording.url,
        duration: 3,
      });
      expect((await send(callback, callbackQuery('recording', number))).statusCode).toBe(200);
      const bareDb = bare.database.db;
      const row = await bareDb
        .selectFrom('messages')
        .selectAll()
        .where('provider_message_id', '=', params.CallSid)
        .executeTakeFirstOrThrow();
      const jobs = () => bareDb.selectFrom('outbox').select(['kind', 'state']).where('ref_id', '=', row.id).execute();
      await until(async () => (await jobs()).some((j) => j.kind === 'media_fetch' && j.state === 'done'));
      expect((await jobs()).map((j) => j.kind)).toEqual(['media_fetch']);
      const after = await bareDb.selectFrom('messages').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
      expect(after.text).toBe('');
      expect(after.metadata).not.toHaveProperty('transcript');
    } finally {
      await bare.close();
    }
  });
});

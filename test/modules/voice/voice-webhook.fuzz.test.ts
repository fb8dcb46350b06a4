import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callStatus,
  incomingCall,
  recordingCallback,
  startFakeTwilioApi,
  twilioWebhook,
  type FakeTwilioApi,
} from '../../helpers/fake-twilio-api.ts';
import { fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { newNumber } from '../sms/sms-helpers.ts';

/**
 * A model of the Twilio Voice webhook: sequences of generated callbacks (incoming calls, the end of
 * <Record>, status callbacks of every status, recording callbacks) for a few call SIDs, in any order,
 * redelivered, with values of the wrong shape, each signed with X-Twilio-Signature. Every request
 * answers 200, or 400 when it names no call (never a 5xx). Each call SID told as an incoming call is
 * one voice message, PENDING until an end, then RECEIVED or ERROR as the first end says; progress
 * told after the end changes nothing; its duration is the last one told by a callback that still
 * applied; each completed recording is one media row. fast-check is seeded.
 */

const FUZZ = fuzzOptions(16);
const WEBHOOK = '/channels/twilio_voice/webhook';

let t: TestApp;
let twilio: FakeTwilioApi;
let tenant: Tenant;
let number: string;
const caller = newNumber();

beforeAll(async () => {
  twilio = await startFakeTwilioApi();
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app, 'Voice model');
  number = newNumber();
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
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
        mode: 'record',
      },
    },
  });
  expect(res.statusCode, res.body).toBe(201);
});
afterAll(async () => {
  await t?.close();
  await twilio?.close();
});

const post = (params: Record<string, string>, query: string) =>
  t.app.inject({
    method: 'POST',
    url: `${WEBHOOK}${query}`,
    ...twilioWebhook(`${PUBLIC_URL}${WEBHOOK}${query}`, params, twilio.authToken),
  });

const statuses = ['initiated', 'ringing', 'in-progress', 'completed', 'busy', 'no-answer', 'canceled', 'failed'];
const ends: Record<string, 'RECEIVED' | 'ERROR'> = {
  completed: 'RECEIVED',
  busy: 'ERROR',
  'no-answer': 'ERROR',
  canceled: 'ERROR',
  failed: 'ERROR',
};
/** A duration as Twilio writes it, or one of the wrong shape (which the reader leaves out). */
const duration = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 5000 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('', '-3', '1.5', 'abc', '1e3', '9999999999') },
);

const callback = fc.record({
  kind: fc.constantFrom('incoming', 'incoming', 'recorded', 'status', 'status', 'recording', 'no_call'),
  call: fc.integer({ min: 0, max: 2 }),
  status: fc.constantFrom(...statuses),
  duration: fc.option(duration, { nil: undefined }),
  recording: fc.integer({ min: 0, max: 1 }),
  recordingStatus: fc.constantFrom('completed', 'completed', 'in-progress', 'absent'),
});

const numberQuery = (event: string) => `?event=${event}&number=${encodeURIComponent(number)}`;

interface ModelCall {
  status: 'PENDING' | 'RECEIVED' | 'ERROR';
  callStatus: string;
  duration?: number;
  recordings: Set<string>;
}

describe('Twilio Voice callbacks, generated', () => {
  it('are answered 200 (400 naming no call) and keep one message per call as the model says', async () => {
    let total = 0;
    let ended = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(callback, { minLength: 1, maxLength: 10 }), async (callbacks) => {
        const sids = [0, 1, 2].map(() => `CA${randomBytes(16).toString('hex')}`);
        const recordings = [twilio.addRecording(randomBytes(64)), twilio.addRecording(randomBytes(64))];
        const model = new Map<string, ModelCall>();
        for (const c of callbacks) {
          const sid = sids[c.call];
          const call = model.get(sid);
          const p = { accountSid: twilio.accountSid, sid, from: caller, to: number };
          let res;
          if (c.kind === 'incoming') {
            res = await post(incomingCall(p), '');
            if (!call) model.set(sid, { status: 'PENDING', callStatus: 'ringing', recordings: new Set() });
          } else if (c.kind === 'no_call') {
            const { CallSid: _, ...params } = callStatus({ ...p, status: c.status });
            res = await post(params, '?event=status');
            expect(res.statusCode, res.body).toBe(400);
            continue;
          } else if (c.kind === 'recording') {
            const r = recordings[c.recording];
            const params: Record<string, string> = recordingCallback({
              accountSid: twilio.accountSid,
              callSid: sid,
              recordingSid: r.sid,
              url: r.url,
              duration: 3,
            });
            if (c.recordingStatus === 'absent') delete params.RecordingStatus;
            else params.RecordingStatus = c.recordingStatus;
            res = await post(params, numberQuery('recording'));
            // A recording's file is attached whenever it is ready, even after the call's end.
            if (call && c.recordingStatus !== 'in-progress') call.recordings.add(r.url);
          } else {
            const params: Record<string, string> = callStatus({ ...p, status: c.status });
            if (c.duration !== undefined) params.CallDuration = c.duration;
            res = await post(params, c.kind === 'recorded' ? numberQuery('recorded') : '?event=status');
            const end = c.kind === 'recorded' ? 'RECEIVED' : ends[c.status];
            if (call && (end || call.status === 'PENDING')) {
              call.callStatus = c.status;
              if (c.duration !== undefined && /^[0-9]{1,9}$/.test(c.duration)) call.duration = Number(c.duration);
              if (end && call.status === 'PENDING') call.status = end;
            }
          }
          expect(res.statusCode, res.body).toBe(200);
        }

        const rows = await t.database.db
          .selectFrom('messages')
          .select(['id', 'provider_message_id', 'status', 'type', 'direction', 'metadata'])
          .where('business_id', '=', tenant.businessId)
          .where('provider_message_id', 'in', sids)
          .execute();
        expect(rows.map((r) => r.provider_message_id).sort()).toEqual([...model.keys()].sort());
        for (const row of rows) {
          const call = model.get(row.provider_message_id!)!;
          const metadata = row.metadata;
          expect(row).toMatchObject({ type: 'voice', direction: 'inbound', status: call.status });
          expect(metadata.call_status).toBe(call.callStatus);
          expect(metadata.duration_seconds).toBe(call.duration);
          const media = await t.database.db
            .selectFrom('media')
            .select('provider_media_id')
            .where('message_id', '=', row.id)
            .execute();
          expect(new Set(media.map((m) => m.provider_media_id))).toEqual(call.recordings);
          expect(media).toHaveLength(call.recordings.size);
          if (call.status !== 'PENDING') ended++;
        }
        total += rows.length;
      }),
      FUZZ,
    );
    // The generator is no use if nothing gets through, or no call ever ends.
    expect(total).toBeGreaterThan(FUZZ.numRuns);
    expect(ended).toBeGreaterThan(FUZZ.numRuns / 4);
  }, 300_000);
});

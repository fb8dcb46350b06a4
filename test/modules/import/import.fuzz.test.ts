import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzOptions, plainJson } from '../../helpers/schema-arbitraries.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { exportEverything } from '../exports/export-helpers.ts';
import { postImport } from './import-helpers.ts';

/**
 * Nothing an import is given is lost without a word. Generated histories (contacts, their
 * conversations, messages and events, with awkward names, phones in every form, timestamps with
 * 0 to 6 fraction digits and UTC offsets, from 1970 to 2100), some of their lines broken (a field
 * of the wrong type, a field missing, a line that is not JSON, a line repeated, a reference to a
 * record that is not there), are imported in one request; then every line is either stored, with
 * its id and its timestamp to the microsecond as the API reads them back, or named in `errors` with
 * its line number. fast-check is seeded.
 */

// Whole on both engines: a short run (a few seconds) whose histories must include events to walk.
const FUZZ = fuzzOptions(25, { halfOnPostgres: false });

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  // The read-back walks an export window per month of generated timestamps.
  t = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '100000' }, { workers: false });
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

/** A timestamp as an importer might write it, and the instant it names in microseconds since 1970. */
const timestamp = fc
  .tuple(
    fc.integer({ min: 0, max: 4_102_444_799 }), // 1970 to 2100, whole seconds
    fc.integer({ min: 0, max: 6 }), // fraction digits
    fc.integer({ min: 0, max: 999_999 }),
    fc.constantFrom('Z', '+00:00', '-03:00', '+05:30', '+14:00'),
  )
  .map(([seconds, digits, micros, zone]) => {
    const fraction = String(micros).padStart(6, '0').slice(0, digits);
    const offsetMinutes =
      zone === 'Z' ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4)));
    const local = new Date((seconds + offsetMinutes * 60) * 1000).toISOString().slice(0, 19);
    return {
      text: `${local}${digits ? `.${fraction}` : ''}${zone}`,
      micros: BigInt(seconds) * 1_000_000n + BigInt(fraction.padEnd(6, '0')),
    };
  });

/** The API's form of an instant: UTC, six fraction digits. */
const apiForm = (micros: bigint) =>
  `${new Date(Number(micros / 1000n)).toISOString().slice(0, 19)}.${String(micros % 1_000_000n).padStart(6, '0')}Z`;

/** One of the values the import takes, now and then one it does not. */
const mostly = <T>(valid: T[], invalid: T) =>
  fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...valid) }, { weight: 1, arbitrary: fc.constant(invalid) });
const awkward = fc.constantFrom('', ' ', 'a\u0000b', '\ud800', '😀', '\u202e', "O'Brien", 'x'.repeat(300));
const name = fc.oneof({ weight: 8, arbitrary: fc.string({ maxLength: 20 }) }, { weight: 1, arbitrary: awkward });
const phone = mostly(
  [null, '+54 9 11 2345-6789', '541123456789', '+52 1 55 1234 5678', '5215512345678', '+1 (415) 555-0100', '+683 4002'],
  'not a phone',
);
const json = fc.oneof({ weight: 6, arbitrary: plainJson }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });

interface Line {
  record: Record<string, unknown>;
  /** The instant of its created_at, in microseconds. */
  micros: bigint;
}

/** A history: contacts, each with conversations, each with messages and events, as import lines. */
const history = fc
  .array(
    fc.record({
      contact: fc.record({
        id: fc.uuid(),
        first_name: name,
        last_name: name,
        email: fc.option(fc.emailAddress()),
        phone_number: phone,
        external_id: fc.option(fc.string({ minLength: 1, maxLength: 20 })),
        tags: fc.array(fc.string({ minLength: 1, maxLength: 10 }), { maxLength: 3 }),
        custom_fields: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), json, { maxKeys: 3 }),
        is_test: fc.boolean(),
        created_at: timestamp,
      }),
      conversations: fc.array(
        fc.record({
          conversation: fc.record({
            id: fc.uuid(),
            channel: mostly(['whatsapp', 'email', 'sms', 'tiktok', 'voice', 'web_embed'], 'carrier_pigeon'),
            created_at: timestamp,
            closed_at: fc.option(timestamp),
          }),
          messages: fc.array(
            fc.record({
              id: fc.uuid(),
              direction: mostly(['inbound', 'outbound'], 'sideways'),
              sender_type: mostly(['contact', 'ai_agent', 'human', 'api', 'automation'], 'user'),
              message_type: fc.constantFrom('text', 'image', 'template'),
              text: name,
              status: mostly(['RECEIVED', 'SENT', 'DELIVERED', 'READ', 'ERROR'], 'LOST'),
              error: fc.option(name),
              metadata: fc.option(fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 2 })),
              created_at: timestamp,
            }),
            { maxLength: 3 },
          ),
          events: fc.array(
            fc.record({
              id: fc.uuid(),
              event_type: fc.constantFrom('conversation_archived', 'agent_assigned', 'contact_field_changed'),
              actor_type: mostly(['ai_agent', 'human', 'api', 'system'], 'user'),
              data: fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 2 }),
              created_at: timestamp,
            }),
            { maxLength: 2 },
          ),
        }),
        { maxLength: 2 },
      ),
    }),
    { minLength: 1, maxLength: 4 },
  )
  .map((contacts) => {
    const lines: Line[] = [];
    for (const { contact, conversations } of contacts) {
      lines.push({
        record: { type: 'contact', ...contact, created_at: contact.created_at.text },
        micros: contact.created_at.micros,
      });
      for (const { conversation, messages, events } of conversations) {
        lines.push({
          record: {
            type: 'conversation',
            ...conversation,
            contact_id: contact.id,
            created_at: conversation.created_at.text,
            closed_at: conversation.closed_at?.text ?? null,
          },
          micros: conversation.created_at.micros,
        });
        for (const m of messages)
          lines.push({
            record: { type: 'message', ...m, conversation_id: conversation.id, created_at: m.created_at.text },
            micros: m.created_at.micros,
          });
        for (const e of events) {
          const conversationId = e.event_type === 'contact_field_changed' ? null : conversation.id;
          lines.push({
            record: {
              type: 'event',
              ...e,
              contact_id: contact.id,
              conversation_id: conversationId,
              created_at: e.created_at.text,
            },
            micros: e.created_at.micros,
          });
        }
      }
    }
    return lines;
  });

/** What becomes of a line: mostly nothing; else sent twice, cut short, or a field changed or dropped. */
const breakage = fc.oneof(
  { weight: 3, arbitrary: fc.constant((line: string) => [line]) },
  fc.constant((line: string) => [line, line]),
  fc.constant((line: string) => [line.slice(0, Math.floor(line.length / 2))]),
  fc
    .tuple(
      fc.constantFrom('id', 'created_at', 'contact_id', 'conversation_id', 'text', 'tags', 'email'),
      fc.option(json),
    )
    .map(([key, value]) => (line: string) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      if (value === null) delete record[key];
      else record[key] = value;
      return [JSON.stringify(record)];
    }),
);

/**
 * The lines of one run with ids of their own: fast-check repeats some uuids from run to run, and a
 * record whose id exists is skipped, so the run's number replaces the first eight digits of each
 * id (references keep pointing at the same records).
 */
function ofRun(lines: Line[], run: number): Line[] {
  const prefix = run.toString(16).padStart(8, '0');
  const own = (value: unknown) =>
    typeof value === 'string' && /^[0-9a-f]{8}-/i.test(value) ? prefix + value.slice(8) : value;
  return lines.map(({ record, micros }) => ({
    micros,
    record: {
      ...record,
      id: own(record.id),
      ...('contact_id' in record ? { contact_id: own(record.contact_id) } : {}),
      ...('conversation_id' in record ? { conversation_id: own(record.conversation_id) } : {}),
    },
  }));
}

describe('an import of generated histories with broken lines', () => {
  it('stores every line or names it in errors, and keeps ids and timestamps to the microsecond', async () => {
    let stored = 0;
    let run = 0;
    /** The instant of each record sent whole, by id, to check the exported timestamps against. */
    const instants = new Map<string, bigint>();
    await fc.assert(
      fc.asyncProperty(history, fc.infiniteStream(breakage), async (generated, breaks) => {
        const sent: { text: string; line: Line }[] = [];
        for (const line of ofRun(generated, ++run)) {
          const whole = JSON.stringify(line.record);
          for (const text of breaks.next().value(whole)) {
            sent.push({ text, line });
            if (text === whole) instants.set(String(line.record.id).toLowerCase(), line.micros);
          }
        }
        const res = await postImport(t.app, tenant.businessId, sent.map((s) => s.text).join('\n') + '\n');
        expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
        const { imported, errors } = res.json<{
          imported: Record<string, number>;
          errors: { line: number; message: string }[];
        }>();
        const refused = new Set(errors.map((e) => e.line));
        for (const e of errors)
          expect(e.line >= 1 && e.line <= sent.length && typeof e.message === 'string', JSON.stringify(e)).toBe(true);

        const tables = {
          contact: 'contacts',
          conversation: 'conversations',
          message: 'messages',
          event: 'events',
        } as const;
        for (const [i, { text, line }] of sent.entries()) {
          const table = tables[line.record.type as keyof typeof tables];
          const id = String(line.record.id).toLowerCase();
          const row = await t.database.db
            .selectFrom(table)
            .select('id')
            .where('business_id', '=', tenant.businessId)
            .where('id', '=', id)
            .executeTakeFirst();
          // A line is stored (or was already, for a repeated one), or named in errors: never neither.
          const label = `line ${i + 1}: ${text.slice(0, 300)} → ${res.body.slice(0, 500)}`;
          if (!refused.has(i + 1)) expect(row, label).toBeDefined();
          if (text === JSON.stringify(line.record) && !refused.has(i + 1) && table === 'contacts') {
            const contact = await t.app.inject({
              method: 'GET',
              url: `/external/v2/contacts/${id}`,
              headers: tenant.headers,
            });
            expect(contact.statusCode, label).toBe(200);
            expect(contact.json().contact.created_at, label).toBe(apiForm(line.micros));
          }
        }
        stored += Object.values(imported).reduce((a, b) => a + b, 0);
      }),
      FUZZ,
    );
    expect(stored).toBeGreaterThan(FUZZ.numRuns);

    // Every message and event stored is exported with its timestamp, whatever its window, but those
    // of test contacts (the exports' rule 4).
    for (const table of ['messages', 'events'] as const) {
      const { stored, exported } = await exportEverything(t, tenant, table);
      expect(stored.length, table).toBeGreaterThan(0);
      expect(exported.map((r) => r.id).sort(), table).toEqual(stored.sort());
      for (const record of exported) {
        const micros = instants.get(record.id);
        if (micros !== undefined) expect(record.created_at, `${table} ${record.id}`).toBe(apiForm(micros));
      }
    }
  }, 600_000);
});

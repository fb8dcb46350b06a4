import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awkwardStrings, fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createWidgetChannel, identityHash, SITE, type WidgetChannel } from './widget-helpers.ts';

/**
 * A model of the widget's visitor API: sequences of generated calls (open a session, anonymous or
 * with the site's identity, its hash right or wrong; write with client ids that repeat; profile,
 * typing and read marks) by a few visitors' browsers, with generated bodies. No call answers a 5xx;
 * a body the API refuses answers 400, a call without a session 401; each client id a visitor wrote
 * is stored once; each anonymous browser is one contact, and the verified identity one contact
 * across its browsers' sessions. fast-check is seeded.
 */

const FUZZ = fuzzOptions(14);
const SECRET = 'identity-secret-0123456789';

let t: TestApp;
let tenant: Tenant;
let widget: WidgetChannel;

beforeAll(async () => {
  t = await buildTestApp({ LOG_LEVEL: 'error' });
  tenant = await createTenant(t.app);
  widget = await createWidgetChannel(t.app, tenant.businessId, { identity_secret: SECRET });
});
afterAll(async () => {
  await t?.close();
});

const anything = fc.jsonValue({ maxDepth: 2 });
const text = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) },
  { weight: 2, arbitrary: awkwardStrings },
  { weight: 1, arbitrary: anything },
);
const call = fc.record({
  // Browsers 0 and 1 are the signed-in customer's; browser 2 an anonymous visitor's.
  browser: fc.integer({ min: 0, max: 2 }),
  kind: fc.constantFrom('session', 'write', 'write', 'write', 'profile', 'typing', 'receipts', 'junk'),
  hashRight: fc.boolean(),
  client: fc.integer({ min: 0, max: 3 }),
  text,
  junk: fc.dictionary(fc.string({ maxLength: 8 }), anything, { maxKeys: 3 }),
});

/** A client id of a visitor's browser (a random UUID there): the same for the same visitor and index. */
const clientId = (seed: string) => {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

let run = 0;

/** A string the API takes: the database holds neither a NUL nor a lone surrogate, so a body with one is refused. */
const storable = (value: unknown): value is string =>
  typeof value === 'string' && !value.includes('\0') && value.isWellFormed();

describe('widget visitors, generated', () => {
  it('are never answered 5xx, store each client id once and keep one contact per visitor', async () => {
    let total = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 2, maxLength: 12 }), async (calls) => {
        const r = ++run;
        const externalId = `cust-${r}`;
        // Each run comes from its own address, so that the per-address limits stay those of a few visitors.
        const remoteAddress = `10.${Math.floor(r / 250)}.${r % 250}.7`;
        const tokens: (string | undefined)[] = [undefined, undefined, undefined];
        const visitorOf: (string | undefined)[] = [undefined, undefined, undefined];
        /** The client ids written, by visitor. */
        const model = new Map<string, Set<string>>();
        const verified = new Set<string>();
        const post = (path: string, payload: unknown, token?: string) =>
          t.app.inject({
            method: 'POST',
            url: `/widget/v1/${widget.widgetId}${path}`,
            remoteAddress,
            headers: { origin: SITE, ...(token ? { authorization: `Bearer ${token}` } : {}) },
            payload: payload as object,
          });
        // The customer's first browser and the anonymous visitor start with a session; the second browser does not.
        const opening = { kind: 'session', hashRight: true, client: 0, text: '', junk: {} };
        for (const c of [{ ...opening, browser: 0 }, { ...opening, browser: 2 }, ...calls]) {
          const token = tokens[c.browser];
          if (c.kind === 'session') {
            const identity =
              c.browser === 2
                ? undefined
                : { external_id: externalId, hash: c.hashRight ? identityHash(SECRET, externalId) : 'f00d' };
            const res = await post('/sessions', { ...(token ? { token } : {}), ...(identity ? { identity } : {}) });
            if (identity && !c.hashRight) {
              expect(res.statusCode, res.body).toBe(401);
              continue;
            }
            expect(res.statusCode, res.body).toBe(200);
            const session = res.json<{ token: string; visitor_id: string; verified: boolean }>();
            expect(session.verified).toBe(identity !== undefined);
            // A browser's own token keeps its visitor; the identity is one visitor on every browser.
            if (!identity && visitorOf[c.browser]) expect(session.visitor_id).toBe(visitorOf[c.browser]);
            const other = visitorOf[1 - c.browser];
            if (identity && other && c.browser < 2 && tokens[1 - c.browser] && verified.has(other))
              expect(session.visitor_id).toBe(other);
            if (identity) verified.add(session.visitor_id);
            tokens[c.browser] = session.token;
            visitorOf[c.browser] = session.visitor_id;
            continue;
          }
          let res;
          let valid: boolean;
          if (c.kind === 'write') {
            res = await post(
              '/messages',
              { client_id: clientId(`${visitorOf[c.browser]}:${c.client}`), text: c.text },
              token,
            );
            valid = storable(c.text) && c.text.length >= 1 && c.text.length <= 4096;
          } else if (c.kind === 'profile') {
            res = await post('/profile', { name: c.text }, token);
            valid = storable(c.text) && c.text.length >= 1 && c.text.length <= 255;
          } else if (c.kind === 'typing') {
            res = await post('/typing', { typing: c.text }, token);
            valid = typeof c.text === 'boolean';
          } else if (c.kind === 'receipts') {
            res = await post('/receipts', { message_ids: [clientId(`${r}:x`)], status: c.text }, token);
            valid = c.text === 'read' || c.text === 'delivered';
          } else {
            res = await post('/messages', c.junk, token);
            valid = false;
          }
          expect(res.statusCode, res.body).toBeLessThan(500);
          if (!token) {
            // Without a session: refused, for its body or for want of a visitor (calls without a token
            // share one write limit, which the runs together pass).
            expect([400, 401, 429], res.body).toContain(res.statusCode);
            continue;
          }
          if (!valid) {
            expect(res.statusCode, res.body).toBe(400);
            continue;
          }
          if (c.kind === 'write') {
            expect(res.statusCode, res.body).toBe(202);
            const visitor = visitorOf[c.browser]!;
            if (!model.has(visitor)) model.set(visitor, new Set());
            model.get(visitor)!.add(clientId(`${visitorOf[c.browser]}:${c.client}`));
          } else if (c.kind === 'profile') expect([200, 409], res.body).toContain(res.statusCode);
          else expect([200, 204], res.body).toContain(res.statusCode);
        }

        const visitors = [...new Set(visitorOf.filter((v): v is string => v !== undefined))];
        if (visitors.length === 0) return;
        const rows = await t.database.db
          .selectFrom('messages')
          .select(['provider_message_id', 'sender_address', 'contact_id'])
          .where('business_id', '=', tenant.businessId)
          .where('channel_id', '=', widget.id)
          .where('direction', '=', 'inbound')
          .where('sender_address', 'in', visitors)
          .execute();
        const stored = new Map<string, Set<string>>();
        for (const row of rows) {
          if (!stored.has(row.sender_address!)) stored.set(row.sender_address!, new Set());
          stored.get(row.sender_address!)!.add(row.provider_message_id!.replace(/^.*?([0-9a-f-]{36})$/, '$1'));
        }
        expect(rows).toHaveLength([...stored.values()].reduce((n, s) => n + s.size, 0));
        expect(stored).toEqual(model);
        // One contact per visitor.
        for (const visitor of stored.keys())
          expect(new Set(rows.filter((x) => x.sender_address === visitor).map((x) => x.contact_id)).size).toBe(1);
        expect(new Set(rows.map((x) => x.contact_id)).size).toBe(stored.size);
        total += rows.length;
      }),
      FUZZ,
    );
    // The generator is no use if nothing gets through.
    expect(total).toBeGreaterThan(FUZZ.numRuns / 2);
  }, 300_000);
});

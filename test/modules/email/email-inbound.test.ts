import MailComposer from 'nodemailer/lib/mail-composer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeLlmApi, type FakeLlmApi } from '../../helpers/fake-llm-api.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { InboundPoller } from '../../../src/modules/inbound/inbound.poller.ts';
import { createAgent } from '../ai/ai-helpers.ts';
import { until } from '../sending/sending.fixtures.ts';
import {
  emailProvider,
  inboundOf,
  mail,
  received,
  withEmail,
  type EmailChannel,
  type EmailFixture,
} from './email-helpers.ts';

let f: EmailFixture;
let llm: FakeLlmApi;
let channel: EmailChannel;

const compose = (options: ConstructorParameters<typeof MailComposer>[0]) => new MailComposer(options).compile().build();

beforeAll(async () => {
  llm = await startFakeLlmApi();
  f = await withEmail({ LLM_URL: llm.url, LLM_API_KEY: 'sk-test-key', LLM_TIMEOUT_SECONDS: '5' });
  channel = await f.channel();
});
afterAll(async () => {
  await f?.close();
  await llm?.close();
});

const db = () => f.t.database.db;
const messagesFrom = async (address: string) =>
  (await inboundOf(f.t, channel.id)).filter((m) => m.sender_address?.toLowerCase() === address.toLowerCase());

describe('reading a mailbox by IMAP', () => {
  it('stores a plain mail from its sender, with its subject, and the sender as a contact by email', async () => {
    const { raw, messageId } = mail({
      from: 'Ana Lopez <Ana@Person.example>',
      to: channel.address,
      subject: 'Opening hours',
      body: 'Are you open on Sunday?',
    });
    await f.dovecot.append(channel.address, raw);
    await until(async () => (await messagesFrom('ana@person.example')).length === 1);
    const [message] = await messagesFrom('ana@person.example');
    expect(message).toMatchObject({
      text: 'Are you open on Sunday?',
      provider_message_id: messageId,
      channel: 'email',
    });
    expect(message.metadata).toMatchObject({ subject: 'Opening hours' });
    const contact = await db()
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', message.contact_id)
      .executeTakeFirstOrThrow();
    expect(contact).toMatchObject({ first_name: 'Ana', last_name: 'Lopez', source: 'email' });
    expect(contact.email?.toLowerCase()).toBe('ana@person.example');
  });

  it('reads an HTML-only mail as plain text', async () => {
    const raw = await compose({
      from: 'html@person.example',
      to: channel.address,
      subject: 'Menu',
      html: '<p>Do you have <b>vegan</b> options?</p><ul><li>lunch</li></ul>',
    });
    await f.dovecot.append(channel.address, raw);
    await until(async () => (await messagesFrom('html@person.example')).length === 1);
    const [message] = await messagesFrom('html@person.example');
    expect(message.text).toContain('Do you have vegan options?');
    expect(message.text).not.toContain('<');
  });

  it('shows the new part of a reply and keeps the quoted history and signature with it', async () => {
    const body = [
      'Yes, 8 pm works for us.',
      '',
      '-- ',
      'Bo',
      '',
      'On Mon, 2 Mar 2026 at 10:00, Shop <desk@shop.example> wrote:',
      '> Would 8 pm suit you?',
      '> Kind regards',
    ].join('\n');
    await f.dovecot.append(channel.address, mail({ from: 'bo@person.example', to: channel.address, body }).raw);
    await until(async () => (await messagesFrom('bo@person.example')).length === 1);
    const [message] = await messagesFrom('bo@person.example');
    expect(message.text).toBe('Yes, 8 pm works for us.');
    expect((message.metadata as { full_text: string }).full_text).toContain('> Would 8 pm suit you?');
    // The export shows the new part, on channel email.
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const until_ = new Date(Date.now() + 3_600_000).toISOString();
    const res = await f.t.app.inject({
      method: 'GET',
      url: `/external/v2/messages?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until_)}`,
      headers: f.tenant.headers,
    });
    expect(res.statusCode, res.body).toBe(200);
    const exported = (res.json().messages as { id: string; channel: string; text: string }[]).find(
      (m) => m.id === message.id,
    );
    expect(exported).toMatchObject({ channel: 'email', text: 'Yes, 8 pm works for us.' });
  });

  it('makes each attachment and inline image a media message, whose bytes are stored from the mail', async () => {
    const pdf = Buffer.from('%PDF-1.4 invoice');
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const raw = await compose({
      from: 'files@person.example',
      to: channel.address,
      subject: 'Invoice',
      text: 'See attached',
      html: '<p>See attached <img src="cid:logo@person"></p>',
      attachments: [
        { filename: 'invoice.pdf', content: pdf, contentType: 'application/pdf' },
        { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@person' },
      ],
    });
    await f.dovecot.append(channel.address, raw);
    await until(async () => (await messagesFrom('files@person.example')).length === 3);
    const messages = await messagesFrom('files@person.example');
    expect(messages.map((m) => m.type).sort()).toEqual(['document', 'image', 'text']);
    const ids = messages.filter((m) => m.type !== 'text').map((m) => m.id);
    await until(async () => {
      const rows = await db().selectFrom('media').selectAll().where('message_id', 'in', ids).execute();
      return rows.length === 2 && rows.every((r) => r.storage_key !== null);
    });
    const rows = await db().selectFrom('media').selectAll().where('message_id', 'in', ids).execute();
    const byName = new Map(rows.map((r) => [r.filename, r]));
    expect(byName.get('invoice.pdf')).toMatchObject({ content_type: 'application/pdf', size_bytes: pdf.length });
    expect(byName.get('logo.png')).toMatchObject({ content_type: 'image/png', size_bytes: png.length });
  });

  it('joins the conversation of the mail a reply answers, and a new sender gets a conversation of their own', async () => {
    const first = mail({ from: 'cy@person.example', to: channel.address, subject: 'Booking' });
    await f.dovecot.append(channel.address, first.raw);
    const reply = mail({
      from: 'cy@person.example',
      to: channel.address,
      subject: 'Re: Booking',
      headers: { 'In-Reply-To': first.messageId, References: first.messageId },
      body: 'And a table for 4',
    });
    await f.dovecot.append(channel.address, reply.raw);
    await f.dovecot.append(channel.address, mail({ from: 'di@person.example', to: channel.address }).raw);
    await until(async () => (await messagesFrom('di@person.example')).length === 1);
    const [a, b] = await messagesFrom('cy@person.example');
    expect(b.conversation_id).toBe(a.conversation_id);
    expect(b.reply_to_id).toBe(a.id);
    expect((b.metadata as { references: string[] }).references).toEqual([first.messageId]);
    const [other] = await messagesFrom('di@person.example');
    expect(other.conversation_id).not.toBe(a.conversation_id);
  });

  it('reads on from the last UID stored after a restart: nothing read twice, nothing missed', async () => {
    const before = (await inboundOf(f.t, channel.id)).length;
    await f.t.app.services.inboundPoller.stop();
    await f.dovecot.append(channel.address, mail({ from: 'el@person.example', to: channel.address, body: 'one' }).raw);
    await f.dovecot.append(channel.address, mail({ from: 'el@person.example', to: channel.address, body: 'two' }).raw);
    f.t.app.services.inboundPoller.start(f.t.app.log);
    await until(async () => (await messagesFrom('el@person.example')).length === 2);
    // One mail more after the restart: read once, and none of the earlier ones again.
    await f.dovecot.append(
      channel.address,
      mail({ from: 'el@person.example', to: channel.address, body: 'three' }).raw,
    );
    await until(async () => (await messagesFrom('el@person.example')).length === 3);
    expect((await messagesFrom('el@person.example')).map((m) => m.text)).toEqual(['one', 'two', 'three']);
    expect((await inboundOf(f.t, channel.id)).length).toBe(before + 3);
  });
});

describe('channels changing while read', () => {
  const patch = (id: string, provider: Record<string, unknown>) =>
    f.t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${f.tenant.businessId}/channels/${id}`,
      headers: adminHeaders,
      payload: { provider },
    });

  it('reads with the new settings once they are replaced, from where the old ones stopped', async () => {
    const rotated = await f.channel();
    const imap = emailProvider(rotated.address, f.dovecot, f.smtp).imap;
    await f.dovecot.append(rotated.address, mail({ from: 'gil@person.example', to: rotated.address }).raw);
    // New settings (the same server, its folder named): the reading starts again from the stored cursor.
    expect((await patch(rotated.id, { imap: { ...imap, mailbox: 'INBOX' } })).statusCode).toBe(200);
    await f.dovecot.append(rotated.address, mail({ from: 'gil@person.example', to: rotated.address }).raw);
    await received(f.t, rotated.id, 2);
    expect((await inboundOf(f.t, rotated.id)).map((m) => m.sender_address)).toEqual([
      'gil@person.example',
      'gil@person.example',
    ]);
  });

  it('is read by one process at a time: another takes it over once the first lets it go', async () => {
    const { services } = f.t.app;
    const second = new InboundPoller(
      f.t.database.db,
      services.channels,
      services.inbound,
      { refreshMs: 50, intervalMs: 200 },
      services.channelLinks,
    );
    second.start(f.t.app.log);
    try {
      await second.refresh();
      expect(services.inboundPoller.readingChannels()).toContain(channel.id);
      expect(second.readingChannels()).not.toContain(channel.id);
      await services.inboundPoller.stop();
      await until(() => second.readingChannels().includes(channel.id));
      await f.dovecot.append(channel.address, mail({ from: 'hu@person.example', to: channel.address }).raw);
      await until(async () => (await messagesFrom('hu@person.example')).length === 1);
    } finally {
      await second.stop();
      services.inboundPoller.start(f.t.app.log);
    }
    await until(() => services.inboundPoller.readingChannels().includes(channel.id));
  });

  it('stops reading a deleted channel', async () => {
    const removed = await f.channel();
    expect(f.t.app.services.inboundPoller.readingChannels()).toContain(removed.id);
    const res = await f.t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${f.tenant.businessId}/channels/${removed.id}`,
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(200);
    await until(() => !f.t.app.services.inboundPoller.readingChannels().includes(removed.id));
  });
});

describe("the channel's AI agent", () => {
  it('answers a mail by email in its thread, and never an auto-reply', async () => {
    const agent = await createAgent(f.t.app, f.tenant.businessId, { activation_rules: { debounce_seconds: 0.1 } });
    const patched = await f.t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${f.tenant.businessId}/channels/${channel.id}`,
      headers: adminHeaders,
      payload: { agent_id: agent.id },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const away = mail({
      from: 'away@person.example',
      to: channel.address,
      subject: 'Out of office',
      headers: { 'Auto-Submitted': 'auto-replied' },
      body: 'I am away until Monday.',
    });
    await f.dovecot.append(channel.address, away.raw);
    const question = mail({
      from: 'fi@person.example',
      to: channel.address,
      subject: 'Order 12',
      body: 'Where is my order?',
    });
    await f.dovecot.append(channel.address, question.raw);
    await until(() => f.smtp.mails.some((m) => m.to.includes('fi@person.example')));
    const answer = f.smtp.mails.find((m) => m.to.includes('fi@person.example'))!;
    expect(answer.raw).toContain('Reply to: Where is my order?');
    expect(answer.raw).toContain(`In-Reply-To: ${question.messageId}`);
    expect(answer.raw).toContain('Subject: Re: Order 12');
    // Mails are stored and handed to the agent in order: the auto-reply before the question was.
    const [auto] = await messagesFrom('away@person.example');
    expect(auto.metadata).toMatchObject({ automated: true });
    const runs = await db()
      .selectFrom('ai_runs')
      .select('id')
      .where('conversation_id', '=', auto.conversation_id)
      .execute();
    expect(runs).toEqual([]);
    expect(f.smtp.mails.some((m) => m.to.includes('away@person.example'))).toBe(false);
  });
});

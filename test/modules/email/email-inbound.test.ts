import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mail, received, withEmail, type EmailFixture } from './email-helpers.ts';

let f: EmailFixture;
beforeAll(async () => {
  f = await withEmail();
});
afterAll(() => f?.close());

describe('reading a mailbox by IMAP', () => {
  it('stores a plain mail from its sender, with subject and the contact by email', async () => {
    const channel = await f.channel();
    const { raw, messageId } = mail({
      from: 'Ana Lopez <Ana@Person.example>',
      to: channel.address,
      subject: 'Opening hours',
      body: 'Are you open on Sunday?',
    });
    await f.dovecot.append(channel.address, raw);
    const [message] = await received(f.t, channel.id, 1);
    expect(message.text).toBe('Are you open on Sunday?');
    expect(message.provider_message_id).toBe(messageId);
    expect(message.channel).toBe('email');
    expect(message.metadata).toMatchObject({ subject: 'Opening hours' });
    const contact = await f.t.database.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', message.contact_id)
      .executeTakeFirstOrThrow();
    expect(contact.first_name).toBe('Ana');
    expect(contact.email?.toLowerCase()).toBe('ana@person.example');
  });
});

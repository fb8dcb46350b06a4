import { emailAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { EmailConfigSchema } from './email.config.ts';
import { EmailProvider } from './email.provider.ts';

/** A mailbox: channels of type `email`, addressed by email address, sent by SMTP and read by IMAP. */
export const emailKind = defineChannelKind({
  kind: 'email',
  schema: EmailConfigSchema,
  create: (config, http) => new EmailProvider(config, http),
  secretFields: ['smtp.password', 'imap.password'],
  // The servers' settings are replaced whole: a new password often comes with a new login or host.
  rotatingFields: ['smtp', 'imap'],
  changeableFields: ['default_subject'],
  urlFields: [],
  hostFields: ['smtp.host', 'imap.host'],
  lookupFields: [],
  accountField: 'address',
  identifierIsAccount: true,
  title: 'Email',
  channelTypes: ['email'],
  address: emailAddress,
  capabilities: {
    serviceWindowHours: null,
    templates: false,
    // An SMTP connection per mail: mailbox providers limit how fast one account sends.
    defaultPacePerSecond: 2,
    mediaKinds: ['image', 'audio', 'video', 'document'],
    threads: true,
  },
  createDocs: `Email: \`identifier\` is the mailbox's address and \`provider\` is required: {kind: "email", address,
smtp: {host, port, secure, user, password}, imap: {host, port, secure, user, password, mailbox?}, default_subject?}.
New mail is read from the IMAP folder (IDLE, or polled) from the UID last stored; nothing is deleted or moved.`,
  inbound: { type: 'poller', intervalMs: 30_000 },
});

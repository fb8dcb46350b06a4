import { Type, type Static } from 'typebox';

const hostRule =
  'Unless the service runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true, a literal loopback, private, link-local or ' +
  'metadata address is refused with 400, and every connection is refused when the name resolves to such an address.';

/** One mail server: where it is, TLS from the start (`secure`, ports 465 and 993) or upgraded, and the login. */
const server = (what: string, port: string) => ({
  host: Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: '^[A-Za-z0-9._:\\[\\]-]+$',
    description: `${what} server host name (or address). ${hostRule}`,
  }),
  port: Type.Integer({ minimum: 1, maximum: 65535, description: `${what} port (${port})` }),
  secure: Type.Boolean({
    description: 'TLS from the first byte (ports 465 and 993); false: STARTTLS when the server offers it',
  }),
  user: Type.String({ minLength: 1, maxLength: 320, description: `${what} login (usually the address)` }),
  password: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: `${what} password (an app password for Gmail and Outlook); stored sealed, never shown`,
  }),
});

/** A mailbox address: local part, @, a domain with a dot. */
const ADDRESS_PATTERN = '^[^\\s@<>()",;:]+@[^\\s@<>()",;:]+\\.[^\\s@<>()",;:]+$';

/**
 * A channel's `provider` object for a mailbox: the address mail is sent from and read at, the SMTP
 * server that sends it, and the IMAP server (and folder) it is read from.
 */
export const EmailConfigSchema = Type.Object(
  {
    kind: Type.Literal('email'),
    address: Type.String({
      pattern: ADDRESS_PATTERN,
      maxLength: 320,
      description: "The mailbox's address: the sender of the mails sent, the channel's account",
    }),
    smtp: Type.Object(server('SMTP', '465 with secure, 587 without'), {
      additionalProperties: false,
      description: 'Where mail is sent',
    }),
    imap: Type.Object(
      {
        ...server('IMAP', '993 with secure, 143 without'),
        mailbox: Type.Optional(
          Type.String({ minLength: 1, maxLength: 255, description: 'Folder read for new mail; default INBOX' }),
        ),
      },
      { additionalProperties: false, description: 'Where mail is read from (never deleted nor moved)' },
    ),
    default_subject: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Subject of a first mail to a person (a reply is "Re: " and the subject it answers); default "Message"',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Configuration of one mailbox channel. */
export type EmailConfig = Static<typeof EmailConfigSchema>;

/** The subject of a mail that answers nothing. */
export const DEFAULT_SUBJECT = 'Message';

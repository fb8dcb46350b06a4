import { Type, type Static } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';

const ButtonText = Type.String({
  minLength: 1,
  maxLength: 25,
  description: 'button label (WhatsApp: up to 25 characters)',
});

/** A template button as the operator defines it (WhatsApp's three static kinds). */
export const TemplateButton = Type.Union([
  Type.Object(
    {
      type: Type.Literal('url'),
      text: ButtonText,
      url: Type.String({
        pattern: '^https?://\\S+$',
        maxLength: 2000,
        description: 'http(s) address; may end in one `{{1}}`, filled per send from `buttons` of POST /send-template',
      }),
    },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Literal('quick_reply'), text: ButtonText }, { additionalProperties: false }),
  Type.Object(
    {
      type: Type.Literal('phone_number'),
      text: ButtonText,
      phone_number: Type.String({ pattern: '^\\+?[0-9]{6,20}$', description: 'number with country code' }),
    },
    { additionalProperties: false },
  ),
]);
export type TemplateButton = Static<typeof TemplateButton>;

export const CreateTemplateBody = Type.Object(
  {
    channel_id: Type.Optional(Uuid),
    name: Type.String({
      pattern: '^[a-z0-9_]{1,512}$',
      maxLength: 512,
      description: 'lower-case letters, digits and underscores, as WhatsApp names templates',
    }),
    language: Type.String({
      pattern: '^[a-z]{2,3}(_[A-Za-z]{2,4})?$',
      maxLength: 12,
      description: 'language code as the provider knows it, e.g. `en`, `en_US`, `pt_BR`',
    }),
    category: Type.Optional(
      Type.Union([Type.Literal('MARKETING'), Type.Literal('UTILITY'), Type.Literal('AUTHENTICATION')]),
    ),
    body: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'text with positional `{{1}}`, `{{2}}` ... or named `{{first_name}}` placeholders (not both)',
    }),
    header: Type.Optional(
      Type.String({ minLength: 1, maxLength: 60, description: 'plain text header (no placeholders)' }),
    ),
    footer: Type.Optional(
      Type.String({ minLength: 1, maxLength: 60, description: 'plain text footer (no placeholders)' }),
    ),
    buttons: Type.Optional(Type.Array(TemplateButton, { maxItems: 10 })),
  },
  { additionalProperties: false },
);
export type CreateTemplateBody = Static<typeof CreateTemplateBody>;

export const Template = Type.Object({
  id: Uuid,
  channel_id: Nullable(Uuid),
  name: Type.String(),
  language: Type.String(),
  category: Nullable(Type.String()),
  body: Type.String(),
  header: Nullable(Type.String()),
  footer: Nullable(Type.String()),
  variables: Type.Array(Type.String(), { description: 'placeholder names in order: "1", "2", ... or the named ones' }),
  buttons: Type.Array(TemplateButton),
  created_at: Timestamp,
});
/** A template as the API shows it (and as render() takes it). */
export type Template = Static<typeof Template>;

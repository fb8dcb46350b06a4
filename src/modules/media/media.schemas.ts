import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { AVATAR_FILE_PATTERN } from './media.avatars.ts';

export const MediaParams = Type.Object(
  {
    id: Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'media id, as in `media[].id` of messages',
    }),
  },
  { additionalProperties: false },
);

export const MediaLinkSchema = Type.Object({
  id: Type.Integer(),
  url: Type.String({
    description: 'signed download address, valid 120 minutes (a file the business sent by URL: that URL)',
  }),
  filename: Nullable(Type.String()),
  contentType: Nullable(Type.String()),
  expiresAt: Nullable(Timestamp, { description: 'when `url` stops working; null for a URL the business gave' }),
});

export const FileParams = Type.Object({ id: Type.String({ maxLength: 20 }) }, { additionalProperties: false });

// Every part is optional here so that a missing or mangled signature answers 403, not 400.
export const FileQuery = Type.Object(
  {
    b: Type.Optional(Type.String({ maxLength: 64, description: 'business id' })),
    exp: Type.Optional(Type.String({ maxLength: 20, description: 'expiry, Unix seconds' })),
    sig: Type.Optional(Type.String({ maxLength: 128, description: 'HMAC-SHA256 signature, base64url' })),
  },
  { additionalProperties: true },
);

export const AvatarParams = Type.Object(
  {
    businessId: Uuid,
    name: Type.String({ pattern: AVATAR_FILE_PATTERN, description: 'the picture, as its address names it' }),
  },
  { additionalProperties: false },
);

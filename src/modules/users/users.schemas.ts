import { Type } from 'typebox';
import { Uuid } from '../../http/common.schemas.ts';

export const CreateUserBody = Type.Object(
  {
    email: Type.String({
      format: 'email',
      minLength: 3,
      maxLength: 254,
      description: 'unique within the business, in any case',
    }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    password: Type.Optional(
      Type.String({ minLength: 8, maxLength: 200, description: 'stored as a salted scrypt hash; never returned' }),
    ),
  },
  { additionalProperties: false },
);
export const User = Type.Object({ id: Uuid, email: Type.String(), name: Type.String() });

import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { Password, Role } from '../users/users.schemas.ts';

export const SignInBody = Type.Object(
  {
    email: Type.String({ format: 'email', minLength: 3, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 200 }),
  },
  { additionalProperties: false },
);

export const SessionView = Type.Object({
  user: Type.Object({ id: Uuid, email: Type.String(), name: Type.String(), role: Role }),
  business: Type.Object({ id: Uuid, name: Type.String() }, { description: 'the business the session acts for' }),
  businesses: Type.Array(Type.Object({ id: Uuid, name: Type.String(), role: Role }), {
    description: 'the businesses the sign-in opened (the same email and password), which the session may switch to',
  }),
  csrf_token: Type.String({ description: 'send it as the x-csrf-token header of every other write' }),
});

export const SwitchBusinessBody = Type.Object({ business_id: Uuid }, { additionalProperties: false });

export const SessionItem = Type.Object({
  id: Uuid,
  created_at: Timestamp,
  last_seen_at: Timestamp,
  expires_at: Timestamp,
  ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  current: Type.Boolean({ description: 'the session of this request' }),
});

export const SessionParams = Type.Object({ id: Uuid }, { additionalProperties: false });

export const ChangePasswordBody = Type.Object(
  { current_password: Type.String({ minLength: 1, maxLength: 200 }), new_password: Password },
  { additionalProperties: false },
);

export const AcceptInvitationBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 200, description: 'the last part of the invitation link' }),
    password: Password,
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'replaces the name given at invitation' }),
    ),
  },
  { additionalProperties: false },
);

import { Type } from 'typebox';
import { OneOf, Timestamp, Uuid } from '../../http/common.schemas.ts';

export const ROLES = ['owner', 'admin', 'agent'] as const;
export const Role = OneOf(ROLES, {
  description:
    'owner and admin reach every dashboard page (settings, developer tools, the team); agent the inbox and contacts',
});

const Email = Type.String({
  format: 'email',
  minLength: 3,
  maxLength: 254,
  description: 'unique within the business, in any case',
});
const Name = Type.String({ minLength: 1, maxLength: 200 });
export const Password = Type.String({
  minLength: 8,
  maxLength: 200,
  description: 'stored as an Argon2id hash; never returned',
});

export const CreateUserBody = Type.Object(
  {
    email: Email,
    name: Name,
    password: Type.Optional(Password),
    role: Type.Optional({ ...Role, description: 'default agent' }),
    invite: Type.Optional(
      Type.Boolean({
        description:
          'create without a password and answer an invitation link, valid DASHBOARD_INVITATION_DAYS (default 7), ' +
          'with which the user chooses their password and signs in, once; not with `password`',
      }),
    ),
  },
  { additionalProperties: false },
);

export const InviteUserBody = Type.Object(
  { email: Email, name: Name, role: Type.Optional({ ...Role, description: 'default agent' }) },
  { additionalProperties: false },
);

export const UpdateUserBody = Type.Object(
  { name: Type.Optional(Name), role: Type.Optional(Role) },
  { additionalProperties: false, minProperties: 1 },
);

export const User = Type.Object({ id: Uuid, email: Type.String(), name: Type.String(), role: Role });

export const Invitation = Type.Object({
  url: Type.String({ description: 'PUBLIC_URL/dashboard/invitations/<token>: hand it to the person; shown only now' }),
  expires_at: Timestamp,
});

export const CreatedUser = Type.Object({ user: User, invitation: Type.Optional(Invitation) });

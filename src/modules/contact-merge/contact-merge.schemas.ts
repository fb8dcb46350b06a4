import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/common.schemas.ts';

/** Names field_choices accepts; every other name is refused with 400. */
export const FIELD_CHOICE_NAME = '^(first_name|last_name|email|collected_data\\..{1,100})$';

export const MergeBody = Type.Object(
  {
    survivor_id: Type.String({ format: 'uuid', description: 'contact that stays' }),
    loser_id: Type.String({
      format: 'uuid',
      description: 'duplicate; merged into the survivor and gone at once, its history moved in the background',
    }),
    field_choices: Type.Optional(
      Type.Record(
        Type.String({ pattern: FIELD_CHOICE_NAME }),
        Type.Union([Type.Literal('survivor'), Type.Literal('loser')]),
        {
          additionalProperties: false,
          maxProperties: 100,
          description:
            'whose value to keep where both contacts have one: first_name, last_name, email, collected_data.<key>; ' +
            "unlisted fields keep the survivor's value",
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type MergeBody = Static<typeof MergeBody>;
export type FieldChoices = NonNullable<MergeBody['field_choices']>;

export const MergeResult = Type.Object({ success: Type.Boolean(), survivor_id: Uuid });

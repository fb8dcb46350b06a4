import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { MergeBody, MergeResult } from './contact-merge.schemas.ts';

/** Public contact merge. */
export const contactMergeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/contacts/merge',
    {
      schema: {
        tags: ['contacts'],
        security: [{ apiKey: [] }],
        summary: 'Merge a duplicate contact into another (cannot be undone)',
        description:
          'The survivor fills its empty fields (names, email, phone, external_id, avatar, source, assigned user) from ' +
          'the loser, and field_choices decide first_name, last_name, email and collected_data.<key> where both have a ' +
          "value; tags are united (survivor's first), custom_fields and collected_data combined (survivor wins unless " +
          "field_choices says loser). The loser's conversations and aliases become the survivor's; emails and phones " +
          "the survivor does not keep (the loser's, or its own email replaced through field_choices) become aliases, so " +
          "lookups by them find the survivor. One contact_field_changed event (source merge) lists the survivor's " +
          'changed fields. The loser is gone from the answer on (its id answers 404 everywhere, lookups never find ' +
          'it). Its messages and events move to the survivor in the background, a part at a time, and are the ' +
          "survivor's from the answer on: the timeline, GET /contacts/:uuid/messages and the exports show them with the " +
          "survivor's contact_id. 400 for the same contact twice or a test contact with a real one; 404 when either " +
          'contact is not in the business or was merged into another.',
        body: MergeBody,
        response: responses({ 200: MergeResult }, 400, 401, 404),
      },
    },
    async (request) => app.services.contactMerge.merge(request.businessId, request.body),
  );
};

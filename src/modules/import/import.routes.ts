import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { AppError } from '../../http/errors.ts';
import { responses } from '../../http/common.schemas.ts';
import { BusinessParams } from '../admin/admin.schemas.ts';
import { ImportResult } from './import.schemas.ts';

const NDJSON = 'application/x-ndjson';

const description = `Streams NDJSON (Content-Type ${NDJSON}), one record a line, into the business; no body size limit.
Records: {"type":"contact","id","first_name","last_name","email","phone_number","external_id","tags","custom_fields","is_test","created_at"},
{"type":"conversation","id","contact_id","channel","channel_id"?,"created_at","closed_at"?},
{"type":"message","id","conversation_id","direction","sender_type","message_type"?,"text","status","error"?,"metadata"?,"created_at"},
{"type":"event","id","conversation_id"?,"contact_id","event_type","actor_type","data","created_at"}.
\`type\` names the kind of record, so a message's own type is \`message_type\` (default text) and an event's own type is \`event_type\`.
Ids and timestamps (microseconds included) are kept; a record whose id exists is skipped and not counted.
A record may refer to records on earlier lines or already stored, of this business only. An event's conversation must be its
contact's; a contact_field_changed event has none (conversation_id null), every other event type one.
Bad lines (malformed JSON, unknown type or field, invalid value or phone, a missing or foreign reference, a duplicate external_id,
a line over 1 MiB) are reported as {line, message} and the import goes on; the first 1000 are listed, error_count counts all.
The import is not one transaction: running the same file again stores only what is missing.`;

/** Operator API: the streamed NDJSON import. */
export const importRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // This scope reads NDJSON only, as the raw stream: nothing is buffered and no body limit applies.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(NDJSON, (_request, payload, done) => done(null, payload));

  app.post(
    '/businesses/:bid/import',
    {
      schema: {
        tags: ['operator'],
        security: [{ adminToken: [] }],
        summary: 'Import contacts, conversations, messages and events (NDJSON, streamed)',
        description,
        params: BusinessParams,
        body: { content: { [NDJSON]: { schema: Type.Unknown({ description: 'one JSON record a line' }) } } },
        response: responses({ 200: ImportResult }, 400, 401, 404, 415),
      },
    },
    async (request) => {
      if (!(request.body instanceof Readable))
        throw new AppError(415, 'unsupported_media_type', `the body must be ${NDJSON}`);
      return app.services.imports.importNdjson(request.params.bid, request.body);
    },
  );
};

import type { FastifyReply } from 'fastify';

/**
 * Sends JSON text as it is, for answers the database wrote (exports, the conversation lookup):
 * Fastify does not serialise a string sent with a JSON content type. The route's response schema
 * still documents the answer.
 */
export function sendJsonText(reply: FastifyReply, json: string) {
  return reply.type('application/json; charset=utf-8').send(json);
}

import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import parseJson from 'secure-json-parse';
import { AppError } from './errors.ts';

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, removeAdditional: false, ...options });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

/**
 * Bodies are validated strictly: wrong types are refused, never coerced, and unknown fields are
 * refused (schemas say additionalProperties: false). Query strings and path parameters arrive as
 * text, so there scalar coercion is what turns "50" into 50.
 */
export function registerValidation(app: FastifyInstance): void {
  const strict = makeAjv({ coerceTypes: false });
  const coercing = makeAjv({ coerceTypes: 'array' });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema));

  // An empty body is "no body", whatever its content type says: POSTs without a body stay valid for
  // clients that always send Content-Type: application/json.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, parseJson(text, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      done(new AppError(400, 'validation_error', `malformed JSON body: ${(err as Error).message}`), undefined);
    }
  });
}

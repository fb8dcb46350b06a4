import { Ajv, type ErrorObject, type FormatDefinition, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import type { FastifyInstance } from 'fastify';
import parseJson from 'secure-json-parse';
import { UUID_PATTERN } from '../lib/ids.ts';
import { storableDateTime } from '../lib/formats.ts';
import { jsonProblem, underflowProblem } from '../lib/json-check.ts';
import { AppError } from './errors.ts';

/**
 * ajv-formats' formats, narrowed to what the database stores: a UUID in its plain form (ajv-formats
 * also takes `urn:uuid:...`, which PostgreSQL refuses), and a date-time whose instant, in UTC, is
 * from year 1 to year 9999 (PostgreSQL has no year 0, and writes years past 9999 in a form no
 * client reads).
 */
const dateTime = fullFormats['date-time'] as FormatDefinition<string> & { validate: (value: string) => boolean };
const FORMATS = {
  uuid: UUID_PATTERN,
  'date-time': { ...dateTime, validate: (value: string) => storableDateTime(value, dateTime.validate) },
};

// verbose: an error carries the schema it failed, which validationDetails reads a union's values from.
function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({
    allErrors: false,
    strict: false,
    useDefaults: true,
    removeAdditional: false,
    verbose: true,
    ...options,
  });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  for (const [name, format] of Object.entries(FORMATS)) ajv.addFormat(name, format);
  return ajv;
}

/** One entry of a validation error's details. */
export interface ValidationDetail {
  location: string;
  path: string;
  message: string;
  /** The values a union of constants or an enum allows. */
  allowed?: unknown[];
}

/** The values a union allows when each of its branches is a constant (TypeBox's union of literals), else undefined. */
function constantsOf(branches: unknown): unknown[] | undefined {
  if (!Array.isArray(branches) || branches.length === 0) return undefined;
  const values: unknown[] = [];
  for (const branch of branches as Record<string, unknown>[]) {
    if (typeof branch !== 'object' || branch === null) return undefined;
    if ('const' in branch) values.push(branch.const);
    else if (Array.isArray(branch.enum)) values.push(...(branch.enum as unknown[]));
    else return undefined;
  }
  return values;
}

const oneOfValues = (values: unknown[]) => `must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;

/**
 * Ajv's errors as the error body's details. Ajv reports a value outside a union of constants as one
 * failure per branch ("must be equal to constant", or "must be string" for a value of another
 * type) and one for the union: those become one detail that lists the allowed values, as does an
 * enum's failure, for every such schema of every route. Written here: ajv-errors needs a message
 * written into each schema, and better-ajv-errors answers in a shape of its own, not these details.
 */
export function validationDetails(errors: readonly ErrorObject[], location: string): ValidationDetail[] {
  const unions = errors.flatMap((e) => {
    const allowed = e.keyword === 'anyOf' || e.keyword === 'oneOf' ? constantsOf(e.schema) : undefined;
    return allowed ? [{ error: e, allowed }] : [];
  });
  const details: ValidationDetail[] = [];
  for (const e of errors) {
    const path = e.instancePath || '/';
    if (unions.some((u) => u.error !== e && e.schemaPath.startsWith(`${u.error.schemaPath}/`))) continue;
    const union = unions.find((u) => u.error === e);
    if (union) {
      details.push({ location, path, message: oneOfValues(union.allowed), allowed: union.allowed });
    } else if (e.keyword === 'enum') {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
      details.push({ location, path, message: oneOfValues(allowed), allowed });
    } else if (e.keyword === 'additionalProperties') {
      const field = (e.params as { additionalProperty?: string }).additionalProperty;
      details.push({ location, path, message: `unknown field "${field}"` });
    } else {
      details.push({ location, path, message: e.message ?? 'is invalid' });
    }
  }
  return details;
}

// One pair per process, not per app: Ajv keeps each schema it compiled (by the schema object), and the
// routes' schemas are module constants, so an app built again (a restart in a test, say) compiles
// none of them again.
const strict = makeAjv({ coerceTypes: false });
const coercing = makeAjv({ coerceTypes: 'array' });

/**
 * Bodies are validated strictly: wrong types are refused, never coerced, and unknown fields are
 * refused (schemas say additionalProperties: false). Query strings and path parameters arrive as
 * text, so there scalar coercion is what turns "50" into 50.
 */
export function registerValidation(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema));
  app.setSchemaErrorFormatter(
    (errors, context) =>
      new AppError(400, 'validation_error', `invalid ${context}`, validationDetails(errors as ErrorObject[], context)),
  );

  // An empty body is "no body", whatever its content type says: POSTs without a body stay valid for
  // clients that always send Content-Type: application/json.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = parseJson(text, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      return done(new AppError(400, 'validation_error', `malformed JSON body: ${(err as Error).message}`), undefined);
    }
    const problem = jsonProblem(parsed) ?? underflowProblem(text);
    if (problem)
      return done(
        new AppError(400, 'validation_error', `invalid body: ${problem.path} ${problem.message}`, [
          { location: 'body', ...problem },
        ]),
        undefined,
      );
    done(null, parsed);
  });
  // A request without a body, to a route whose body is an object of optional fields (an API key's
  // {name?}), is that object empty; where fields are required, validation names them.
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined && request.routeOptions.schema?.body) request.body = {};
    done();
  });
  // A NUL in the query string or the path, where it is written %00. A callback hook, not an async
  // one: it runs on every request and rarely has anything to say.
  app.addHook('onRequest', (request, _reply, done) => {
    const at = request.url.indexOf('%00');
    if (at === -1) return done();
    const query = request.url.indexOf('?');
    const location = query !== -1 && at > query ? 'querystring' : 'params';
    done(
      new AppError(400, 'validation_error', 'text must not contain the NUL character (%00)', [
        { location, path: '/', message: 'contains the NUL character' },
      ]),
    );
  });
}

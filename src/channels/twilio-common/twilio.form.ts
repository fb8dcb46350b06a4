/** A form-encoded body's parameters; a repeated name keeps every value, in order. */
export type FormParams = Record<string, string | string[]>;

/** The parameters of an `application/x-www-form-urlencoded` body (Twilio's webhooks post these). */
export function parseForm(raw: Buffer | string): FormParams {
  const params: FormParams = Object.create(null) as FormParams;
  for (const [name, value] of new URLSearchParams(typeof raw === 'string' ? raw : raw.toString('utf8'))) {
    const before = params[name];
    params[name] = before === undefined ? value : [...(Array.isArray(before) ? before : [before]), value];
  }
  return params;
}

/**
 * One parameter's value: the first when repeated, null when absent or empty. NULs are dropped, since
 * PostgreSQL stores none (the signature is checked on the parameters as sent, not on these).
 */
export function param(params: FormParams, name: string): string | null {
  const value = params[name];
  const first = (Array.isArray(value) ? value[0] : value)?.replace(/\0/g, '');
  return first === undefined || first === '' ? null : first;
}

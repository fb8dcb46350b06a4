import { invalid } from '../../lib/domain-errors.ts';
import type { CreateTemplateBody } from './templates.schemas.ts';

// WhatsApp's placeholder forms: `{{1}}` positional, `{{first_name}}` named (lower-case letters,
// digits, underscores). Anything else between double braces is refused at creation, so a send
// never meets a placeholder it cannot fill.
const PLACEHOLDER = /\{\{([0-9]+|[a-z_][a-z0-9_]*)\}\}/g;
const LOOSE = /\{\{.*?\}\}/g;

/** The variables of a template body, in the order their values are sent. */
export function bodyVariables(body: string): string[] {
  const found = [...body.matchAll(PLACEHOLDER)].map((m) => m[1]);
  const malformed = [...body.matchAll(LOOSE)]
    .map((m) => m[0])
    .filter((p) => !/^\{\{([0-9]+|[a-z_][a-z0-9_]*)\}\}$/.test(p));
  if (malformed.length > 0) {
    throw invalid(
      `malformed placeholder ${malformed[0]}: use {{1}} or {{name}} (lower-case letters, digits, underscores)`,
      [{ field: 'body' }],
    );
  }
  if (found.length === 0) return [];
  const numeric = found.filter((name) => /^[0-9]+$/.test(name));
  if (numeric.length > 0 && numeric.length < found.length) {
    throw invalid('body mixes positional ({{1}}) and named ({{name}}) placeholders', [{ field: 'body' }]);
  }
  if (numeric.length === 0) return [...new Set(found)];
  // Positional values travel as a list, so the numbers must run 1..n without a gap.
  const numbers = [...new Set(numeric.map(Number))].sort((a, b) => a - b);
  if (numbers.some((n, i) => n !== i + 1)) {
    throw invalid('positional placeholders must be numbered {{1}}, {{2}}, ... without gaps', [{ field: 'body' }]);
  }
  return numbers.map(String);
}

/** Checks the parts WhatsApp constrains beyond the schema; returns the body's variables. */
export function checkTemplate(input: CreateTemplateBody): string[] {
  const variables = bodyVariables(input.body);
  for (const field of ['header', 'footer'] as const) {
    const text = input[field];
    if (text !== undefined && /\{\{.*?\}\}/.test(text)) throw invalid(`${field} cannot hold placeholders`, [{ field }]);
  }
  const buttons = input.buttons ?? [];
  buttons.forEach((button, index) => {
    if (button.type !== 'url') return;
    const placeholders = button.url.match(LOOSE) ?? [];
    if (placeholders.length > 1 || placeholders.some((p) => p !== '{{1}}')) {
      throw invalid('a URL button takes at most one placeholder, {{1}}', [{ field: `buttons/${index}/url` }]);
    }
    if (placeholders.length === 1 && !button.url.endsWith('{{1}}')) {
      throw invalid('the {{1}} of a URL button must end the address', [{ field: `buttons/${index}/url` }]);
    }
  });
  if (buttons.filter((b) => b.type === 'url').length > 2)
    throw invalid('at most 2 URL buttons', [{ field: 'buttons' }]);
  if (buttons.filter((b) => b.type === 'phone_number').length > 1)
    throw invalid('at most 1 phone number button', [{ field: 'buttons' }]);
  return variables;
}

/** The body with every placeholder replaced by its value. */
export function fillBody(body: string, values: ReadonlyMap<string, string>): string {
  return body.replace(PLACEHOLDER, (whole, name: string) => values.get(name) ?? whole);
}

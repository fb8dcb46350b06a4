import type { OutboundContent, TemplateParameter, TemplateUrlButtonParameter } from '../../channels/channel.types.ts';
import { DomainError, invalid } from '../../lib/domain-errors.ts';
import { fillBody } from './templates.placeholders.ts';
import type { Template } from './templates.schemas.ts';

/** Values of one send: body variables by key, and dynamic URL button values. */
export interface TemplateValues {
  /**
   * Numeric keys fill positional variables, named keys named ones, each with a string (up to
   * MAX_VARIABLE_LENGTH characters), a number or a boolean; other keys are ignored, whatever they hold.
   */
  byKey: Record<string, unknown>;
  buttons?: { index: number; sub_type: 'url'; text: string }[];
}

/** A template ready to send: the provider content and the text to store with the message. */
export interface RenderedTemplate {
  content: Extract<OutboundContent, { kind: 'template' }>;
  text: string;
}

/** The longest value of a body variable, in characters. */
export const MAX_VARIABLE_LENGTH = 1024;

const missing = (what: string) =>
  new DomainError('invalid', 'template_variable_missing', `template variable ${what} has no value`, [
    { variable: what },
  ]);
const badButton = (message: string, index: number) =>
  new DomainError('invalid', 'template_button_invalid', message, [{ index }]);
const badValue = (variable: string, message: string) =>
  invalid(`template variable ${variable} ${message}`, [{ location: 'body', path: `/${variable}`, message }]);

/** The text of a variable's value; undefined when absent or null. */
function variableText(variable: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
    throw badValue(variable, 'must be a string, a number or a boolean');
  const text = String(value);
  if ([...text].length > MAX_VARIABLE_LENGTH)
    throw badValue(variable, `must be at most ${MAX_VARIABLE_LENGTH} characters`);
  return text;
}

/** Fills a template for one send; refuses a send that would reach the provider incomplete. */
export function renderTemplate(template: Template, values: TemplateValues): RenderedTemplate {
  const named = template.variables.some((v) => !/^[0-9]+$/.test(v));
  // A map, not an object: a variable may be named `__proto__`.
  const filled = new Map<string, string>();
  const bodyParameters: TemplateParameter[] = template.variables.map((variable) => {
    // Own keys only: a variable named `constructor` is not filled by what every object inherits.
    const value = variableText(variable, Object.hasOwn(values.byKey, variable) ? values.byKey[variable] : undefined);
    // WhatsApp refuses empty parameters, so an empty value is as missing as an absent one.
    if (value === undefined || value.trim() === '') throw missing(variable);
    filled.set(variable, value);
    return named ? { name: variable, text: value } : { text: value };
  });

  const dynamic = new Set(template.buttons.flatMap((b, i) => (b.type === 'url' && b.url.includes('{{1}}') ? [i] : [])));
  const urlButtons: TemplateUrlButtonParameter[] = [];
  for (const button of values.buttons ?? []) {
    if (!dynamic.has(button.index))
      throw badButton(`button ${button.index} is not a URL button with a placeholder`, button.index);
    if (urlButtons.some((b) => b.index === String(button.index)))
      throw badButton(`button ${button.index} is given twice`, button.index);
    if (button.text.trim() === '') throw missing(`button ${button.index}`);
    urlButtons.push({ index: String(button.index), text: button.text });
  }
  for (const index of dynamic) {
    if (!urlButtons.some((b) => b.index === String(index))) throw missing(`button ${index}`);
  }
  urlButtons.sort((a, b) => Number(a.index) - Number(b.index));

  return {
    content: {
      kind: 'template',
      name: template.name,
      languageCode: template.language,
      ...(bodyParameters.length > 0 ? { bodyParameters } : {}),
      ...(urlButtons.length > 0 ? { urlButtons } : {}),
    },
    text: fillBody(template.body, filled),
  };
}

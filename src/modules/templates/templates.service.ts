import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { conflict, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { checkTemplate } from './templates.placeholders.ts';
import { renderTemplate, type RenderedTemplate, type TemplateValues } from './templates.render.ts';
import { templatesRepository, type TemplateRow } from './templates.repository.ts';
import type { CreateTemplateBody, Template, TemplateButton } from './templates.schemas.ts';

function toTemplate(row: TemplateRow): Template {
  return {
    id: row.id,
    channel_id: row.channel_id,
    name: row.name,
    language: row.language,
    category: row.category,
    body: row.body,
    header: row.header,
    footer: row.footer,
    variables: row.variables,
    buttons: row.buttons as TemplateButton[],
    created_at: row.created_at,
  };
}

/** The conflict of a name and language already taken, or the error as it was. */
function duplicateOr(err: unknown, input: CreateTemplateBody): unknown {
  if (isUniqueViolation(err))
    return conflict(`template "${input.name}" already exists in language ${input.language}`, [{ field: 'name' }]);
  return err;
}

/** Message templates of a business: defined by the operator, filled per send. */
export class TemplatesService {
  constructor(private readonly db: Db) {}

  async create(businessId: string, input: CreateTemplateBody): Promise<Template> {
    const values = await this.valuesOf(businessId, input);
    try {
      return toTemplate(await templatesRepository.insert(this.db, businessId, { id: newId(), ...values }));
    } catch (err) {
      throw duplicateOr(err, input);
    }
  }

  /** Replaces a template's definition with `input`, held to the rules of a new one. */
  async replace(businessId: string, id: string, input: CreateTemplateBody): Promise<Template> {
    const values = await this.valuesOf(businessId, input);
    try {
      const row = await templatesRepository.update(this.db, businessId, id, values);
      if (!row) throw notFound('template');
      return toTemplate(row);
    } catch (err) {
      throw duplicateOr(err, input);
    }
  }

  /** The stored columns of a definition: its placeholders checked, its channel the business's. */
  private async valuesOf(businessId: string, input: CreateTemplateBody) {
    const variables = checkTemplate(input);
    if (
      input.channel_id !== undefined &&
      !(await templatesRepository.channelExists(this.db, businessId, input.channel_id))
    ) {
      throw notFound('channel');
    }
    return {
      channel_id: input.channel_id ?? null,
      name: input.name,
      language: input.language,
      category: input.category ?? null,
      body: input.body,
      header: input.header ?? null,
      footer: input.footer ?? null,
      buttons: JSON.stringify(input.buttons ?? []),
      variables: JSON.stringify(variables),
    };
  }

  /** The template, or undefined when the business has none with this id. */
  async get(businessId: string, id: string): Promise<Template | undefined> {
    const row = await templatesRepository.find(this.db, businessId, id);
    return row && toTemplate(row);
  }

  async read(businessId: string, id: string): Promise<Template> {
    const template = await this.get(businessId, id);
    if (!template) throw notFound('template');
    return template;
  }

  async list(businessId: string, limit: number): Promise<Template[]> {
    return (await templatesRepository.list(this.db, businessId, limit)).map(toTemplate);
  }

  async delete(businessId: string, id: string): Promise<void> {
    if (!(await templatesRepository.delete(this.db, businessId, id))) throw notFound('template');
  }

  /** Fills a template for one send (throws 400 template_variable_missing / template_button_invalid). */
  render(template: Template, values: TemplateValues): RenderedTemplate {
    return renderTemplate(template, values);
  }
}

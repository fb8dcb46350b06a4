import type { OutboundContent, SendRequest, TemplateHeader, TemplateParameter } from '../channel.types.ts';
import type {
  GraphMediaLink,
  GraphSendBody,
  GraphTemplateComponent,
  GraphTemplateParameter,
} from './whatsapp-cloud.wire.ts';

// Meta rejects a caption on audio and stickers, and a filename on anything but documents.
const captionKinds = new Set(['image', 'video', 'document']);

/** The exact JSON body of `POST {api_base_url}/{phone_number_id}/messages` for a send request. */
export function buildSendBody(request: SendRequest): GraphSendBody {
  const body: GraphSendBody = {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: request.to,
    type: request.content.kind === 'media' ? request.content.mediaKind : request.content.kind,
  };
  if (request.replyToProviderMessageId) body.context = { message_id: request.replyToProviderMessageId };
  if (request.reference) body.biz_opaque_callback_data = request.reference;
  return Object.assign(body, contentPart(request.content));
}

function contentPart(content: OutboundContent): Partial<GraphSendBody> {
  switch (content.kind) {
    case 'text':
      return { text: { body: content.text, preview_url: content.previewUrl ?? false } };
    case 'media': {
      const media: GraphMediaLink = { link: content.url };
      if (content.caption && captionKinds.has(content.mediaKind)) media.caption = content.caption;
      if (content.filename && content.mediaKind === 'document') media.filename = content.filename;
      return { [content.mediaKind]: media };
    }
    case 'template': {
      const components: GraphTemplateComponent[] = [];
      if (content.header) components.push({ type: 'header', parameters: headerParameters(content.header) });
      if (content.bodyParameters?.length) {
        components.push({ type: 'body', parameters: content.bodyParameters.map(textParameter) });
      }
      for (const button of content.urlButtons ?? []) {
        components.push({
          type: 'button',
          sub_type: 'url',
          index: button.index,
          parameters: [{ type: 'text', text: button.text }],
        });
      }
      return {
        template: {
          name: content.name,
          language: { code: content.languageCode },
          ...(components.length ? { components } : {}),
        },
      };
    }
  }
}

function textParameter(parameter: TemplateParameter): GraphTemplateParameter {
  return parameter.name !== undefined
    ? { type: 'text', parameter_name: parameter.name, text: parameter.text }
    : { type: 'text', text: parameter.text };
}

function headerParameters(header: TemplateHeader): GraphTemplateParameter[] {
  switch (header.kind) {
    case 'text':
      return header.parameters.map(textParameter);
    case 'image':
      return [{ type: 'image', image: { link: header.url } }];
    case 'video':
      return [{ type: 'video', video: { link: header.url } }];
    case 'document':
      return [
        { type: 'document', document: { link: header.url, ...(header.filename ? { filename: header.filename } : {}) } },
      ];
  }
}

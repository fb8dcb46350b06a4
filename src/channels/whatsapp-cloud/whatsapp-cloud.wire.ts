// Graph API (WhatsApp Cloud API) JSON shapes, as Meta documents them. Inbound shapes are what we
// read; the parser still checks every field, because the body is untrusted input.

/** Parameter of a template component. */
export type GraphTemplateParameter =
  | { type: 'text'; text: string; parameter_name?: string }
  | { type: 'image'; image: { link: string } }
  | { type: 'video'; video: { link: string } }
  | { type: 'document'; document: { link: string; filename?: string } };

/** Component of a template send. */
export type GraphTemplateComponent =
  | { type: 'header' | 'body'; parameters: GraphTemplateParameter[] }
  | { type: 'button'; sub_type: 'url'; index: string; parameters: GraphTemplateParameter[] };

/** Media object of a send by link. */
export interface GraphMediaLink {
  link: string;
  caption?: string;
  filename?: string;
}

/** Body of `POST /{phone_number_id}/messages`. */
export interface GraphSendBody {
  messaging_product: 'whatsapp';
  recipient_type: 'individual';
  to: string;
  type: string;
  context?: { message_id: string };
  /** Echoed in the message's status notifications (at most 512 characters). */
  biz_opaque_callback_data?: string;
  text?: { body: string; preview_url: boolean };
  image?: GraphMediaLink;
  audio?: GraphMediaLink;
  video?: GraphMediaLink;
  document?: GraphMediaLink;
  sticker?: GraphMediaLink;
  template?: { name: string; language: { code: string }; components?: GraphTemplateComponent[] };
}

/** Successful answer of a send. */
export interface GraphSendAnswer {
  messaging_product: 'whatsapp';
  contacts: { input: string; wa_id: string }[];
  messages: { id: string; message_status?: string }[];
}

/** Error body of any Graph API call. */
export interface GraphErrorBody {
  error: {
    message: string;
    type?: string;
    code: number;
    error_subcode?: number;
    error_data?: { messaging_product?: string; details?: string };
    fbtrace_id?: string;
  };
}

/** Answer of `GET /{media_id}`. */
export interface GraphMediaInfo {
  messaging_product?: 'whatsapp';
  url: string;
  mime_type: string;
  sha256?: string;
  file_size?: number | string;
  id: string;
}

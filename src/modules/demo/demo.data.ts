import { v7 } from 'uuid';
import type { ImportRecord, MessageRecord } from '../import/import.schemas.ts';

/** The demo contact whose number the start-up message suggests looking up. */
export const DEMO_CONTACT_PHONE = '5491123456789';

/** The AI agent that answers the demo conversations, with a configuration to read and change. */
export const DEMO_AGENT = {
  name: 'Sofía',
  system_prompt:
    'You are Sofía, the assistant of an online shop. Answer questions about orders, shipping and prices; hand over to a person for returns.',
  model: 'default',
  prompt_config: { tone: 'friendly', language: 'es', max_sentences: 3 },
  tools: {
    human_handoff: {
      enabled: true,
      instructions: 'Hand over for returns, refunds, or when the customer asks for a person.',
    },
    order_status: { enabled: true, instructions: 'Look up an order when the customer gives its number.' },
  },
  activation_rules: { contact_tags: { none: ['no_ai'] }, debounce_seconds: 3 },
  follow_up_settings: { after_minutes: 60, message: '¿Pudiste resolverlo? Si necesitas algo más, escríbeme aquí.' },
};

interface DemoContact {
  first: string;
  last: string;
  phone: string;
  tags?: string[];
  custom?: Record<string, string>;
}

const contacts: DemoContact[] = [
  {
    first: 'Lucía',
    last: 'Fernández',
    phone: DEMO_CONTACT_PHONE,
    tags: ['vip'],
    custom: { plan: 'pro', city: 'Buenos Aires' },
  },
  { first: 'Matías', last: 'González', phone: '56912345678', custom: { plan: 'free', city: 'Santiago' } },
  {
    first: 'Sofía',
    last: 'Hernández',
    phone: '5215512345678',
    tags: ['wholesale'],
    custom: { city: 'Ciudad de México' },
  },
  { first: 'Emily', last: 'Carter', phone: '14155550123', custom: { plan: 'pro', city: 'San Francisco' } },
  { first: 'Pablo', last: 'Ruiz', phone: '34612345678', custom: { city: 'Madrid' } },
  { first: 'Ana', last: 'Souza', phone: '5511987654321', tags: ['new'], custom: { city: 'São Paulo' } },
  { first: 'Oliver', last: 'Smith', phone: '447700900123', custom: { city: 'London' } },
  { first: 'Lena', last: 'Müller', phone: '4915123456789', custom: { plan: 'free', city: 'Berlin' } },
  { first: 'Camila', last: 'Restrepo', phone: '573001234567', tags: ['vip'], custom: { city: 'Bogotá' } },
  { first: 'Chloé', last: 'Martin', phone: '33612345678', custom: { city: 'Paris' } },
];

type Line = [from: 'contact' | 'ai_agent' | 'human', text: string, status?: MessageRecord['status']];

/** Conversations: whose, on which channel, and what was said (contact / AI agent / team member). */
const conversations: {
  contact: number;
  channel: 'whatsapp' | 'instagram' | 'email' | 'web_embed' | 'messenger' | 'sms';
  archived?: boolean;
  lines: Line[];
}[] = [
  {
    contact: 0,
    channel: 'whatsapp',
    lines: [
      ['contact', 'Hola! Quería saber si mi pedido 48213 ya salió'],
      ['ai_agent', '¡Hola Lucía! Sí, salió hoy a las 9:40. Llega mañana antes de las 13 h.'],
      ['contact', 'Genial. ¿Puedo cambiar la dirección de entrega?'],
      ['ai_agent', 'Te paso con una persona del equipo para hacerlo.'],
      ['human', 'Hola Lucía, soy Marta. Pasame la nueva dirección y la actualizo.'],
      ['contact', 'Av. Corrientes 1234, 5° B'],
      ['human', 'Listo, actualizada. ¡Gracias!', 'READ'],
    ],
  },
  {
    contact: 1,
    channel: 'whatsapp',
    lines: [
      ['contact', '¿Tienen envío a Valparaíso?'],
      ['ai_agent', 'Sí, enviamos a todo Chile. El envío a Valparaíso tarda 2 a 3 días hábiles.'],
      ['contact', 'Perfecto, gracias'],
      ['ai_agent', '¡A ti! Si necesitas algo más, escríbeme aquí.', 'DELIVERED'],
    ],
  },
  {
    contact: 2,
    channel: 'instagram',
    lines: [
      ['contact', 'Hola, ¿venden al por mayor?'],
      ['ai_agent', 'Sí. Para pedidos de más de 50 unidades hay precio mayorista. ¿Qué productos te interesan?'],
      ['contact', 'Las tazas de cerámica, unas 200'],
      ['human', 'Hola Sofía, te preparo una cotización y te la envío hoy.'],
      ['contact', 'Gracias!'],
    ],
  },
  {
    contact: 3,
    channel: 'email',
    lines: [
      ['contact', 'Hi, I was charged twice for invoice INV-2291. Could you check?'],
      ['human', 'Hi Emily, sorry about that. I see the duplicate charge and have refunded it.'],
      ['contact', 'Thanks, that was quick.'],
      ['human', 'You are welcome. The refund shows in 3-5 business days.', 'DELIVERED'],
    ],
  },
  {
    contact: 4,
    channel: 'web_embed',
    lines: [
      ['contact', '¿Cuál es el horario de atención?'],
      ['ai_agent', 'Atendemos de lunes a viernes de 9 a 18 h (hora de Madrid).'],
      ['contact', 'Vale, gracias'],
    ],
  },
  {
    contact: 5,
    channel: 'messenger',
    lines: [
      ['contact', 'Oi! Vocês entregam em Campinas?'],
      ['ai_agent', 'Olá Ana! Sim, entregamos em Campinas em até 4 dias úteis.'],
      ['contact', 'Ótimo, vou fazer o pedido'],
      ['ai_agent', 'Perfeito! Qualquer dúvida, é só chamar.'],
    ],
  },
  {
    contact: 6,
    channel: 'sms',
    lines: [
      ['ai_agent', 'Your order #5532 has shipped. Reply STOP to opt out.', 'DELIVERED'],
      ['contact', 'When will it arrive?'],
      ['ai_agent', 'It should arrive on Thursday.', 'ERROR'],
    ],
  },
  {
    contact: 8,
    channel: 'whatsapp',
    archived: true,
    lines: [
      ['contact', 'Hola, ya recibí el pedido, todo perfecto'],
      ['ai_agent', '¡Qué bueno, Camila! Gracias por avisarnos.'],
      ['contact', '🙌'],
      ['ai_agent', 'Cerramos esta conversación. Escríbenos cuando quieras.', 'READ'],
    ],
  },
  {
    contact: 7,
    channel: 'whatsapp',
    lines: [
      ['contact', 'Hallo, kann ich meine Bestellung stornieren?'],
      ['ai_agent', 'Hallo Lena! Ja, solange sie noch nicht versendet wurde. Wie lautet die Bestellnummer?'],
      ['contact', '7781'],
      ['human', 'Erledigt, die Bestellung 7781 ist storniert.'],
    ],
  },
];

const iso = (ms: number) => new Date(ms).toISOString();
// Imported ids are kept, so demo ids carry the time of their record, as UUIDv7 ids made then would.
const idAt = (ms: number) => v7({ msecs: ms });

/** The demo data set as import records, dated over the last few days before `now`. */
export function demoRecords(now = Date.now()): ImportRecord[] {
  const start = now - 4 * 24 * 3600_000;
  const records: ImportRecord[] = [];
  const contactIds = contacts.map((c, i) => {
    const at = start + i * 600_000;
    const id = idAt(at);
    const email =
      `${c.first}.${c.last}`
        .normalize('NFD')
        .replace(/[^A-Za-z.]/g, '')
        .toLowerCase() + '@example.com';
    records.push({
      type: 'contact',
      id,
      first_name: c.first,
      last_name: c.last,
      email,
      phone_number: c.phone,
      external_id: `demo-${i + 1}`,
      tags: c.tags ?? [],
      custom_fields: c.custom ?? {},
      is_test: false,
      created_at: iso(at),
    });
    return id;
  });

  conversations.forEach((conversation, k) => {
    let at = start + 3 * 3600_000 + k * 7 * 3600_000;
    const conversationId = idAt(at);
    const contactId = contactIds[conversation.contact];
    const closedAt = conversation.archived ? at + (conversation.lines.length + 30) * 60_000 : undefined;
    records.push({
      type: 'conversation',
      id: conversationId,
      contact_id: contactId,
      channel: conversation.channel,
      created_at: iso(at),
      closed_at: closedAt ? iso(closedAt) : null,
    });
    for (const [from, text, status] of conversation.lines) {
      at += 60_000 + text.length * 700;
      const inbound = from === 'contact';
      records.push({
        type: 'message',
        id: idAt(at),
        conversation_id: conversationId,
        direction: inbound ? 'inbound' : 'outbound',
        sender_type: from,
        message_type: 'text',
        text,
        status: status ?? (inbound ? 'RECEIVED' : 'READ'),
        error: status === 'ERROR' ? 'the recipient could not be reached' : null,
        created_at: iso(at),
      });
    }
    if (closedAt) {
      records.push({
        type: 'event',
        id: idAt(closedAt),
        conversation_id: conversationId,
        contact_id: contactId,
        event_type: 'conversation_archived',
        actor_type: 'human',
        data: { origin: 'dashboard' },
        created_at: iso(closedAt),
      });
    }
    if (k === 0) {
      records.push({
        type: 'event',
        id: idAt(at + 1000),
        conversation_id: conversationId,
        contact_id: contactId,
        event_type: 'sentiment_analyzed',
        actor_type: 'system',
        data: { sentiment: 'POSITIVE' },
        created_at: iso(at + 1000),
      });
    }
  });

  const changedAt = now - 3600_000;
  records.push({
    type: 'event',
    id: idAt(changedAt),
    conversation_id: null,
    contact_id: contactIds[0],
    event_type: 'contact_field_changed',
    actor_type: 'api',
    data: {
      source: 'api',
      changes: [
        { field: 'plan', custom: true, from: 'free', to: 'pro' },
        { field: 'tags', custom: false, from: [], to: ['vip'] },
      ],
    },
    created_at: iso(changedAt),
  });
  return records;
}

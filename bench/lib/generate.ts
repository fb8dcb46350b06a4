/**
 * Synthetic data for the benchmarks: NDJSON import records (docs/API-GUIDE.md#import-records) produced
 * lazily, so a data set of millions of records never exists in memory as a whole, and the phone
 * numbers of those contacts, so lookups can ask for an existing one without keeping a list.
 */

/** Shape of the data set: N contacts, one conversation each, M messages per conversation. */
export interface DataSetShape {
  contacts: number;
  messagesPerConversation: number;
}

const COUNTRIES = 5;
const BASE_MS = Date.UTC(2024, 0, 1);

/**
 * The phone number of contact `i`, unique per contact (also by lookup key): digits with country
 * code, in several countries. Argentina and Mexico are stored half in the mobile form (549 / 521)
 * and half in the short form (54 / 52), so lookups in the other form cross both ways.
 */
export function phoneOf(i: number): string {
  const k = Math.floor(i / COUNTRIES);
  switch (i % COUNTRIES) {
    case 0:
      return (k % 2 === 0 ? '54911' : '5411') + String(40_000_000 + k); // Buenos Aires mobile
    case 1:
      return (k % 2 === 0 ? '52155' : '5255') + String(50_000_000 + k); // Mexico City mobile
    case 2:
      return '569' + String(40_000_000 + k); // Chile mobile
    case 3:
      return '346' + String(10_000_000 + k); // Spain mobile
    default:
      return '1415' + String(2_000_000 + k); // San Francisco
  }
}

/**
 * The number to query for contact `i`: its stored form, or (when `otherForm`) the variant written
 * without / with the optional mobile digit (549 <-> 54, 521 <-> 52, 569 <-> 56).
 */
export function queryPhoneOf(i: number, otherForm: boolean): string {
  const stored = phoneOf(i);
  if (!otherForm) return stored;
  if (stored.startsWith('549')) return '54' + stored.slice(3);
  if (stored.startsWith('54')) return '549' + stored.slice(2);
  if (stored.startsWith('521')) return '52' + stored.slice(3);
  if (stored.startsWith('52')) return '521' + stored.slice(2);
  if (stored.startsWith('569')) return '56' + stored.slice(3);
  return stored;
}

/** A small fast PRNG (mulberry32): the benchmark's query mix is reproducible from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Query mix: a random existing contact, asked in the other phone form 30% of the time. */
export function randomQueryPhone(contacts: number, random: () => number): string {
  const i = Math.floor(random() * contacts);
  return queryPhoneOf(i, random() < 0.3);
}

const hex = (value: number, width: number) => value.toString(16).padStart(width, '0');

/**
 * A valid UUIDv7 built from its time and a (kind, serial) pair instead of randomness: unique per
 * record of a run, and about ten times cheaper than a random one at millions of records.
 */
function uuid7(ms: number, kind: number, serial: number, salt: number): string {
  const t = hex(ms, 12);
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${hex(kind, 3)}-${hex(0x8000 | (salt & 0x3fff), 4)}-${hex(serial, 12)}`;
}

/** ISO 8601 with microseconds, as the service keeps them. */
function isoMicros(ms: number, micros: number): string {
  return new Date(ms).toISOString().slice(0, -1) + String(micros % 1000).padStart(3, '0') + 'Z';
}

const FIRST = ['Ana', 'Bruno', 'Carla', 'Diego', 'Elena', 'Facundo', 'Gabriela', 'Hugo', 'Inés', 'Javier'];
const LAST = ['García', 'López', 'Martínez', 'Rodríguez', 'Pérez', 'Gómez', 'Fernández', 'Díaz'];
const TEXTS = [
  'Hola, quería consultar por mi pedido',
  'Gracias por escribirnos. ¿Cuál es el número de pedido?',
  'Es el 48213, lo compré el lunes',
  'Ya lo revisé: sale mañana por la mañana',
  'Perfecto, muchas gracias!',
];

/**
 * The records of a data set as NDJSON lines, per contact: the contact, its conversation, then its
 * messages (the order an export of a live system has). A per-run salt keeps ids of two runs apart.
 */
export async function* importLines(
  shape: DataSetShape,
  salt = Math.floor(Math.random() * 0x3fff),
  stop?: () => boolean,
): AsyncGenerator<string> {
  for (let i = 0; i < shape.contacts; i++) {
    if (stop?.()) return;
    const ms = BASE_MS + i * 1000;
    const contactId = uuid7(ms, 1, i, salt);
    const conversationId = uuid7(ms, 2, i, salt);
    yield JSON.stringify({
      type: 'contact',
      id: contactId,
      first_name: FIRST[i % FIRST.length],
      last_name: LAST[i % LAST.length],
      email: `c${i}.${salt}@bench.example`,
      phone_number: phoneOf(i),
      external_id: `ext-${salt}-${i}`,
      tags: i % 3 === 0 ? ['vip'] : [],
      custom_fields: { plan: i % 2 === 0 ? 'pro' : 'free' },
      is_test: false,
      created_at: isoMicros(ms, i),
    });
    yield JSON.stringify({
      type: 'conversation',
      id: conversationId,
      contact_id: contactId,
      channel: 'whatsapp',
      created_at: isoMicros(ms, i + 1),
    });
    for (let j = 0; j < shape.messagesPerConversation; j++) {
      const inbound = j % 2 === 0;
      yield JSON.stringify({
        type: 'message',
        id: uuid7(ms + j + 1, 3, i * 1000 + j, salt),
        conversation_id: conversationId,
        direction: inbound ? 'inbound' : 'outbound',
        sender_type: inbound ? 'contact' : 'ai_agent',
        message_type: 'text',
        text: TEXTS[j % TEXTS.length],
        status: inbound ? 'RECEIVED' : 'DELIVERED',
        created_at: isoMicros(ms + j + 1, j),
      });
    }
  }
}

/** Number of records a data set has. */
export function recordCount(shape: DataSetShape): number {
  return shape.contacts * (2 + shape.messagesPerConversation);
}

/**
 * The NDJSON body as chunks of about `chunkBytes`, ready to stream into an HTTP request: one Buffer
 * per chunk keeps the per-write overhead low. `onRecords` reports progress (records handed over);
 * `stop` ends the data set early, at a contact boundary (the time bound of a benchmark).
 */
export async function* ndjsonChunks(
  shape: DataSetShape,
  onRecords?: (sent: number) => void,
  stop?: () => boolean,
  chunkBytes = 64 * 1024,
): AsyncGenerator<Buffer> {
  let parts: string[] = [];
  let size = 0;
  let sent = 0;
  for await (const line of importLines(shape, undefined, stop)) {
    parts.push(line, '\n');
    size += line.length + 1;
    sent++;
    if (size >= chunkBytes) {
      yield Buffer.from(parts.join(''));
      onRecords?.(sent);
      parts = [];
      size = 0;
    }
  }
  if (parts.length > 0) yield Buffer.from(parts.join(''));
  onRecords?.(sent);
}

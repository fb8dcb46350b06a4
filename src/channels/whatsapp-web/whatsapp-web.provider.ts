import { setTimeout as sleep } from 'node:timers/promises';
import {
  Browsers,
  DisconnectReason,
  downloadContentFromMessage,
  type AnyMessageContent,
  type ConnectionState,
} from 'baileys';
import type { ILogger } from 'baileys/lib/Utils/logger.js';
import type {
  ChannelLink,
  ErrorClassification,
  FetchedMedia,
  InboundMessage,
  OutboundContent,
  ParsedNotification,
  SendRequest,
  SendResult,
} from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { classifyNetworkError } from '../network-errors.ts';
import type { ChannelProvider, PollCursor, PolledBatch, WatchOptions } from '../provider.ts';
import { ProviderError } from '../provider-error.ts';
import { DEFAULT_MAX_MEDIA_BYTES, DEFAULT_MEDIA_TIMEOUT_MS, downloadSentFile } from '../provider-http.ts';
import { linkAuthState, storedCreds } from './whatsapp-web.auth-state.ts';
import type { WhatsAppWebConfig } from './whatsapp-web.config.ts';
import {
  addressOf,
  inboundOf,
  jidOf,
  mediaReferenceOf,
  statusOfReceipt,
  statusOfUpdate,
} from './whatsapp-web.inbound.ts';
import { whatsAppWebTransport, type LinkSocket, type SocketFactory } from './whatsapp-web.socket.ts';

/** Longest wait between two reconnections of a link that keeps closing. */
const MAX_BACKOFF_MS = 60_000;
/** Ids of the messages sent here, remembered so that their echo (`messages.upsert`) is not stored as the phone's. */
const SENT_IDS_KEPT = 1000;

/** How one connection of the link ended. */
type Ending = 'aborted' | 'logged_out' | 'unused' | 'restart' | 'closed';

/** Baileys logs nothing of ours: the adapter reports what matters through its link's state. */
const silentLogger: ILogger = {
  level: 'silent',
  child: () => silentLogger,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** The status code of a Baileys error (a Boom), when it has one. */
function statusCodeOf(err: unknown): number | undefined {
  const code = (err as { output?: { statusCode?: unknown } } | undefined)?.output?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/**
 * A WhatsApp number linked like WhatsApp Web, through Baileys: the service is one of the phone's
 * linked devices. The connection is held while `watch` runs (in the process holding the channel,
 * inbound.poller.ts), with the link's credentials and keys stored by the core (ChannelLink): it
 * shows a QR code (or a pairing code) until the phone links it, reconnects with backoff, and stops
 * at a logout until the operator asks to link again. Sends go through the socket held here.
 */
export class WhatsAppWebProvider implements ChannelProvider {
  readonly kind = 'whatsapp_web';
  private socket: LinkSocket | undefined;
  private open = false;
  private loggedOut = false;
  /** The link's storage while `watch` runs here (the LIDs kept as addresses are marked in it). */
  private link: ChannelLink | undefined;
  private readonly sentIds = new Set<string>();

  constructor(
    private readonly config: WhatsAppWebConfig,
    private readonly http: ProviderHttpOptions = {},
    private readonly makeSocket: SocketFactory = (c) => whatsAppWebTransport.makeSocket(c),
  ) {}

  async send(request: SendRequest): Promise<SendResult> {
    const { content } = request;
    if (content.kind === 'template') throw new ProviderError('unsupported', 'WhatsApp Web sends no templates', false);
    const message = await this.messageOf(content);
    // Paced (the channel's pace) and jittered: an even machine rhythm is what WhatsApp's bans look for.
    await whatsAppWebTransport.pause(whatsAppWebTransport.jitterMs());
    const socket = this.socket;
    if (!socket || !this.open) {
      if (this.loggedOut) throw new ProviderError('logged_out', 'the phone logged this link out', false);
      // Another process may hold the link, or it is reconnecting: the send job tries again.
      throw new ProviderError('not_linked', 'the WhatsApp link is not connected in this process', true);
    }
    await request.beforeSend?.();
    const sent = await socket.sendMessage(await this.jidFor(request.to), message);
    const id = sent?.key.id;
    if (!id) throw new ProviderError('no_message_id', 'WhatsApp did not number the message', false);
    this.remember(id);
    return { providerMessageId: id, recipientId: request.to };
  }

  /** Baileys' content of a send; a file by URL is downloaded here, through the core's dispatcher (address policy). */
  private async messageOf(content: Exclude<OutboundContent, { kind: 'template' }>): Promise<AnyMessageContent> {
    // No link preview: Baileys would fetch the URLs of the text itself, outside the core's dispatcher.
    if (content.kind === 'text') return { text: content.text, linkPreview: null };
    const { bytes, contentType } = await downloadSentFile(content.url, this.http);
    const mimetype = contentType ?? 'application/octet-stream';
    const caption = content.caption;
    switch (content.mediaKind) {
      case 'image':
        return { image: bytes, mimetype, ...(caption ? { caption } : {}) };
      case 'video':
        return { video: bytes, mimetype, ...(caption ? { caption } : {}) };
      case 'audio':
        return { audio: bytes, mimetype };
      case 'sticker':
        return { sticker: bytes, mimetype };
      default: {
        const fileName =
          content.filename ?? decodeURIComponent(new URL(content.url).pathname.split('/').pop() || 'document');
        return { document: bytes, mimetype, fileName, ...(caption ? { caption } : {}) };
      }
    }
  }

  /**
   * The chat a send goes to: a person known here only by a LID (no phone number given) has it as
   * their address, digits alone once stored, which must not be taken for a phone number.
   */
  private async jidFor(address: string): Promise<string> {
    const digits = address.replace(/\D/g, '');
    const lid = this.link && (await this.link.read([lidKey(digits)])).has(lidKey(digits));
    return lid ? `${digits}@lid` : jidOf(address);
  }

  /**
   * The messages' senders named by a LID alone: the phone number Baileys learnt for it, when it did;
   * else the LID stays the address, marked so that a reply goes to it.
   */
  private async withPhones(messages: InboundMessage[], socket: LinkSocket, link: ChannelLink) {
    const marks = new Map<string, string>();
    for (const message of messages) {
      if (!message.from.endsWith('@lid')) continue;
      const phone = await socket.signalRepository?.lidMapping.getPNForLID(message.from).catch(() => null);
      const known = phone ? addressOf(phone) : null;
      if (known && !known.endsWith('@lid')) message.from = known;
      else marks.set(lidKey(message.from.replace(/\D/g, '')), '1');
    }
    if (marks.size > 0) await link.write(marks);
    return messages;
  }

  private remember(id: string): void {
    this.sentIds.add(id);
    if (this.sentIds.size > SENT_IDS_KEPT) this.sentIds.delete(this.sentIds.values().next().value!);
  }

  /** Nothing is posted to a webhook for this kind: every notification is refused. */
  verifySignature(): boolean {
    return false;
  }

  classifyError(err: unknown): ErrorClassification {
    if (err instanceof ProviderError) return { retryable: err.retryable, code: err.code, detail: err.message };
    const status = statusCodeOf(err);
    if (status !== undefined) {
      // The socket closed under the send: it may have gone out; the send job decides what to do.
      const final: number[] = [DisconnectReason.loggedOut, DisconnectReason.forbidden];
      return {
        retryable: !final.includes(status),
        mayHaveArrived: true,
        code: `whatsapp_${status}`,
        detail: err instanceof Error ? err.message : String(err),
      };
    }
    return (
      classifyNetworkError(err) ?? {
        retryable: false,
        code: 'internal',
        detail: err instanceof Error ? err.message : String(err),
      }
    );
  }

  /** An inbound file, downloaded from WhatsApp's media servers (through the core's dispatcher) and decrypted. */
  async fetchMedia(mediaId: string): Promise<FetchedMedia> {
    const reference = mediaReferenceOf(mediaId);
    if (!reference) throw new ProviderError('invalid_media_id', 'not a media id of WhatsApp Web', false);
    const stream = await downloadContentFromMessage(
      { mediaKey: Buffer.from(reference.k, 'base64'), directPath: reference.p, url: reference.u ?? undefined },
      reference.t,
      {
        options: {
          dispatcher: this.http.dispatcher,
          signal: AbortSignal.timeout(this.http.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS),
        } as RequestInit,
      },
    ).catch((err: unknown) => {
      const status = statusCodeOf(err) ?? Number(/status code (\d+)/i.exec(String(err))?.[1]);
      // WhatsApp keeps a file a few weeks; a gone one is asked for again only through the phone.
      if (status === 404 || status === 410)
        throw new ProviderError('media_gone', 'the file expired on WhatsApp', false);
      throw err;
    });
    const limit = this.http.maxMediaBytes ?? DEFAULT_MAX_MEDIA_BYTES;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        stream.destroy();
        throw new ProviderError('media_too_large', `the file is larger than ${limit} bytes`, false);
      }
      chunks.push(chunk);
    }
    const bytes = Buffer.concat(chunks);
    return { bytes, mimeType: reference.m ?? mimeTypeOf(reference.t), fileSize: bytes.length };
  }

  /**
   * Holds the link until `signal` aborts: connects when it has credentials or the operator asked
   * to link, else looks at the operator's requests every `intervalMs`. Each connection's messages
   * and receipts are handed to `store` one batch at a time, in the order they came.
   */
  async watch(
    _cursor: PollCursor | null,
    store: (batch: PolledBatch) => Promise<void>,
    options: WatchOptions,
  ): Promise<void> {
    const { signal, link } = options;
    if (!link) throw new Error('a WhatsApp Web channel is read with its link');
    this.link = link;
    let backoffMs = 0;
    let pairingPhone: string | null = null;
    while (!signal.aborted) {
      const asked = await link.requests();
      pairingPhone = asked.pairingPhone ?? pairingPhone;
      const creds = await storedCreds(link);
      if (!creds?.me && !asked.requested) {
        this.loggedOut = asked.state === 'logged_out';
        await sleep(options.intervalMs, undefined, { signal }).catch(() => undefined);
        continue;
      }
      const ending = await this.connect(link, store, options, pairingPhone, () => (backoffMs = 0));
      pairingPhone = null;
      if (ending === 'aborted') break;
      if (ending === 'logged_out') {
        // Logged out from the phone: its credentials are worth nothing now, and no QR code is shown
        // again until the operator asks to link.
        this.loggedOut = true;
        await link.clear();
        await link.report({ state: 'logged_out', account: null });
      } else if (ending === 'unused') {
        await link.clear();
        await link.report({ state: 'unlinked' });
      } else if (ending === 'closed') {
        backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(1000, backoffMs * 2));
        await sleep(backoffMs, undefined, { signal }).catch(() => undefined);
      }
      // 'restart': WhatsApp asks for a new connection right after linking; at once.
    }
  }

  /** One connection of the link, until it closes or `signal` aborts. */
  private async connect(
    link: ChannelLink,
    store: (batch: PolledBatch) => Promise<void>,
    { signal, intervalMs }: WatchOptions,
    pairingPhone: string | null,
    opened: () => void,
  ): Promise<Ending> {
    const { state, saveCreds } = await linkAuthState(link);
    const wasLinked = !!state.creds.me;
    const socket = this.makeSocket({
      auth: state,
      logger: silentLogger,
      browser: Browsers.ubuntu('Chrome'),
      markOnlineOnConnect: false,
      syncFullHistory: false,
      shouldSyncHistoryMessage: () => false,
    });
    this.socket = socket;
    const account = this.config.phone_number;
    let chain = Promise.resolve();
    let failed: Error | undefined;
    // A write that failed (the database down) ends the connection; `watch` rejects and starts again later.
    const fail = (err: unknown) => {
      failed ??= err instanceof Error ? err : new Error('storing what the link read failed', { cause: err });
      void socket.end(undefined).catch(() => undefined);
    };
    let lastQr: string | null = null;
    let phone = pairingPhone;
    const handOver = (notification: ParsedNotification) => {
      if (notification.messages.length + notification.statuses.length === 0) return;
      chain = chain
        .then(async () => {
          if (failed !== undefined) return;
          await this.withPhones(notification.messages, socket, link);
          await store({ notification, cursor: { at: new Date().toISOString() } });
        })
        .catch(fail);
    };
    const ending = new Promise<Ending>((resolve) => {
      const pairingTimer = setInterval(() => {
        if (this.open || phone) return;
        link
          .requests()
          .then((asked) => {
            phone = asked.pairingPhone;
            return phone && lastQr ? pair() : undefined;
          })
          .catch(fail);
      }, intervalMs);
      const pair = async () => {
        const number = phone;
        phone = null;
        if (!number) return;
        const code = await socket.requestPairingCode(number).catch(() => null);
        if (code) await link.report({ state: 'qr', qr: lastQr, pairingCode: code });
      };
      const onAbort = () => void socket.end(undefined).catch(() => undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      socket.ev.on('creds.update', () => void saveCreds().catch(fail));
      socket.ev.on('connection.update', (update: Partial<ConnectionState>) => {
        if (update.qr) {
          lastQr = update.qr;
          link
            .report({ state: 'qr', qr: update.qr })
            .then(() => (phone ? pair() : undefined))
            .catch(fail);
        }
        if (update.connection === 'open') {
          this.open = true;
          this.loggedOut = false;
          opened();
          const me = addressOf(socket.user?.id);
          link.report({ state: 'linked', account: me && !me.endsWith('@lid') ? me : account }).catch(fail);
        }
        if (update.connection === 'close') {
          this.open = false;
          clearInterval(pairingTimer);
          signal.removeEventListener('abort', onAbort);
          const code = statusCodeOf(update.lastDisconnect?.error);
          if (signal.aborted) resolve('aborted');
          else if (code === DisconnectReason.loggedOut) resolve('logged_out');
          else if (code === DisconnectReason.restartRequired) resolve('restart');
          else if (!wasLinked && !state.creds.me && code === DisconnectReason.timedOut) resolve('unused');
          else resolve('closed');
        }
      });
      socket.ev.on('messages.upsert', ({ messages }) => {
        const inbound = messages
          .filter((m) => !(m.key.fromMe && m.key.id && this.sentIds.has(m.key.id)))
          .map((m) => inboundOf(m, account))
          .filter((m) => m !== null);
        handOver({ messages: inbound, statuses: [], contacts: [] });
      });
      socket.ev.on('messages.update', (updates) =>
        handOver({
          messages: [],
          statuses: updates.map((u) => statusOfUpdate(u, account)).filter((s) => s !== null),
          contacts: [],
        }),
      );
      socket.ev.on('message-receipt.update', (receipts) =>
        handOver({
          messages: [],
          statuses: receipts.map((r) => statusOfReceipt(r, account)).filter((s) => s !== null),
          contacts: [],
        }),
      );
    });
    const result = await ending;
    await chain;
    if (this.socket === socket) this.socket = undefined;
    if (failed !== undefined) throw failed;
    return result;
  }
}

/** The link key marking a LID kept as a person's address. */
const lidKey = (digits: string) => `address-lid-${digits}`;

/** The type of a file of a download type, when WhatsApp's reference named none. */
function mimeTypeOf(type: string): string {
  if (type === 'image') return 'image/jpeg';
  if (type === 'video') return 'video/mp4';
  if (type === 'audio') return 'audio/ogg';
  if (type === 'sticker') return 'image/webp';
  return 'application/octet-stream';
}

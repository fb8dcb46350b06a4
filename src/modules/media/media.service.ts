import { create as contentDisposition } from 'content-disposition';
import { createHash } from 'node:crypto';
import type { Db } from '../../db/database.ts';
import { forbidden, notFound } from '../../lib/domain-errors.ts';
import type { JobHandler } from '../../jobs/outbox.worker.ts';
import type { FileStorage, StoredFile } from '../../storage/file-storage.ts';
import { AvatarStore, type ServedAvatar } from './media.avatars.ts';
import { MEDIA_FETCH_JOB, mediaFetchJobHandler, type AfterFetch, type ProviderLookup } from './media.fetch-job.ts';
import { mediaRepository, type MediaRow } from './media.repository.ts';
import { signedMediaUrl, verifyMediaSignature, type MediaSigningKey } from './media.signing.ts';

/** A file of a message as the per-contact list, the webhook and GET /media/:id show it. */
export interface MediaLink {
  id: number;
  url: string;
  filename: string | null;
  contentType: string | null;
  /** Null for a file the business sent by its own URL: that link is not ours to expire. */
  expiresAt: string | null;
}

/** A file of a message, with its bytes when they are in the store (MediaService.filesOf). */
export interface MessageFile {
  id: number;
  filename: string | null;
  contentType: string;
  size: number;
  /** Reads the stored bytes; absent while the file is not in the store. */
  read?: () => Promise<Buffer>;
}

/** A file stored for a message about to be written (MediaService.storeForSend). */
export interface FileForSend {
  key: string;
  size: number;
  sha256: string;
  contentType: string;
  filename: string | null;
}

/** A stored file ready to serve. */
export interface ServedFile extends StoredFile {
  contentType: string;
  contentDisposition: string;
}

// Types a browser may show inline from our origin; anything else (HTML, SVG, scripts) downloads.
const INLINE = /^(image\/(png|jpeg|gif|webp)|audio\/[\w.+-]+|video\/[\w.+-]+|application\/pdf|text\/plain)$/;

/** Files of messages (download from providers, storage, signed download addresses) and contacts' pictures. */
export class MediaService {
  /** Contacts' pictures from the providers' profiles, in the same file store. */
  readonly avatars: AvatarStore;

  constructor(
    private readonly db: Db,
    private readonly storage: FileStorage,
    private readonly signingKey: MediaSigningKey,
    private readonly providerFor: ProviderLookup,
    private readonly afterFetch?: AfterFetch,
  ) {
    this.avatars = new AvatarStore(storage, signingKey.publicUrl);
  }

  /** The outbox handler of 'media_fetch' jobs. */
  fetchJobHandler(): JobHandler {
    return mediaFetchJobHandler(this.db, this.storage, this.providerFor, this.afterFetch);
  }

  /**
   * A file the service received itself (a widget visitor's upload), written whole into the store
   * under the business's `received/` keys before any message points at it.
   */
  async storeReceived(
    businessId: string,
    name: string,
    bytes: Buffer,
    contentType: string,
  ): Promise<{ key: string; size: number; sha256: string }> {
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    // Named by its digest too: a retry that sends other bytes under the same name never replaces
    // the file a stored message already points at.
    const key = `${businessId}/received/${name}-${sha256.slice(0, 16)}`;
    const { size } = await this.storage.put(key, bytes, contentType);
    return { key, size, sha256 };
  }

  /**
   * The files of a message in the order they were attached, and whether its download job is still
   * open (`fetching`: a file not in the store yet may still come).
   */
  async filesOf(businessId: string, messageId: string): Promise<{ files: MessageFile[]; fetching: boolean }> {
    const rows = await mediaRepository.forMessages(this.db, businessId, [messageId]);
    const files = rows.map((row): MessageFile => {
      const key = row.storage_key;
      return {
        id: row.id,
        filename: row.filename,
        contentType: row.content_type ?? 'application/octet-stream',
        size: Number(row.size_bytes ?? 0),
        ...(key ? { read: () => this.readStored(key) } : {}),
      };
    });
    const fetching =
      files.some((f) => !f.read) && (await mediaRepository.fetchOpen(this.db, businessId, messageId, MEDIA_FETCH_JOB));
    return { files, fetching };
  }

  /**
   * A file to send, written into the store under the business's `received/` keys before the
   * message that sends it is written (reserveForSend's `attach` records it with that message).
   */
  async storeForSend(
    businessId: string,
    name: string,
    file: { bytes: Buffer; contentType: string; filename: string | null },
  ): Promise<FileForSend> {
    const stored = await this.storeReceived(businessId, name, file.bytes, file.contentType);
    return { ...stored, contentType: file.contentType, filename: file.filename };
  }

  /**
   * In the transaction that writes a message sending a stored file (storeForSend): the file's
   * media id, drawn first, and its signed address for the send's content (valid 120 minutes,
   * longer than the send's retries last); `attach` then records the file with the message.
   */
  async reserveForSend(
    trx: Db,
    businessId: string,
    file: FileForSend,
    now: number = Date.now(),
  ): Promise<{ url: string; attach: (messageId: string) => Promise<void> }> {
    const id = await mediaRepository.reserveId(trx);
    return {
      url: signedMediaUrl(this.signingKey, businessId, id, now).url,
      attach: (messageId) =>
        mediaRepository.insertStored(trx, businessId, {
          id,
          message_id: messageId,
          storage_key: file.key,
          size_bytes: file.size,
          content_type: file.contentType,
          sha256: file.sha256,
          filename: file.filename,
        }),
    };
  }

  private async readStored(key: string): Promise<Buffer> {
    const file = await this.storage.get(key);
    if (!file) throw new Error(`stored file ${key} is missing`);
    const chunks: Buffer[] = [];
    for await (const chunk of file.stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  private link(row: MediaRow, now: number): MediaLink {
    const base = { id: row.id, filename: row.filename, contentType: row.content_type };
    if (row.storage_key === null && row.source_url !== null) return { ...base, url: row.source_url, expiresAt: null };
    return { ...base, ...signedMediaUrl(this.signingKey, row.business_id, row.id, now) };
  }

  /** GET /media/:id: a fresh signed address of a file of the business. */
  async get(businessId: string, id: number, now: number = Date.now()): Promise<MediaLink> {
    const row = await mediaRepository.find(this.db, businessId, id);
    if (!row) throw notFound('media');
    return this.link(row, now);
  }

  /**
   * The files of several messages with addresses signed at `now` (valid 120 minutes), by message
   * id: what `attachments` and `media` of message lists and webhook payloads carry.
   */
  async forMessages(
    businessId: string,
    messageIds: readonly string[],
    now: number = Date.now(),
  ): Promise<Map<string, MediaLink[]>> {
    const byMessage = new Map<string, MediaLink[]>();
    for (const row of await mediaRepository.forMessages(this.db, businessId, messageIds)) {
      const list = byMessage.get(row.message_id) ?? [];
      list.push(this.link(row, now));
      byMessage.set(row.message_id, list);
    }
    return byMessage;
  }

  /** GET /files/:id: the file behind a signed address; 403 for a bad or expired signature. */
  async open(
    query: { id: string; b?: string; exp?: string; sig?: string },
    now: number = Date.now(),
  ): Promise<ServedFile> {
    if (
      !verifyMediaSignature(
        this.signingKey.secretKeys,
        { mediaId: query.id, businessId: query.b, exp: query.exp, sig: query.sig },
        now,
      )
    ) {
      throw forbidden('invalid or expired signature');
    }
    const row = await mediaRepository.find(this.db, query.b!, Number(query.id));
    const file = row?.storage_key ? await this.storage.get(row.storage_key) : undefined;
    if (!row || !file) throw notFound('file');
    const contentType = row.content_type ?? 'application/octet-stream';
    const baseType = contentType.split(';')[0].trim().toLowerCase();
    const filename = row.filename ?? `media-${row.id}${extensionOf(baseType)}`;
    return {
      ...file,
      contentType,
      contentDisposition: contentDisposition(filename, { type: INLINE.test(baseType) ? 'inline' : 'attachment' }),
    };
  }

  /** GET /files/avatars/:businessId/:name: a contact's picture; the unguessable name is the permission. */
  openAvatar(businessId: string, name: string): Promise<ServedAvatar> {
    return this.avatars.open(businessId, name);
  }
}

function extensionOf(contentType: string): string {
  const sub = /^[a-z]+\/([a-z0-9]+)$/.exec(contentType)?.[1];
  return sub ? `.${sub === 'jpeg' ? 'jpg' : sub}` : '';
}

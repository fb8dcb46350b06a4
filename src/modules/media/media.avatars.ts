import { randomBytes } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import type { FetchedMedia } from '../../channels/provider.ts';
import { notFound } from '../../lib/domain-errors.ts';
import type { FileStorage, StoredFile } from '../../storage/file-storage.ts';

/** The largest profile picture kept; Meta's are some tens of kilobytes. */
export const AVATAR_MAX_BYTES = 1024 * 1024;

/**
 * The picture types kept, by the type file-type reads from their bytes, with the extension their
 * file names carry: a body must be an image whatever its content type says, and nothing a browser
 * would run (SVG, HTML) is ever served from our origin as a contact's picture.
 */
const IMAGE_TYPES: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};
const CONTENT_TYPES = Object.fromEntries(Object.entries(IMAGE_TYPES).map(([type, ext]) => [ext, type]));

/** A stored picture's file name: 128 random bits (base64url) and its type's extension. */
export const AVATAR_FILE_PATTERN = '^[A-Za-z0-9_-]{22}\\.(png|jpg|gif|webp)$';
const AVATAR_FILE = new RegExp(AVATAR_FILE_PATTERN);

/** A picture that is no image of a kept type, or is too large: final, a retry would fetch the same. */
export class AvatarRefused extends Error {}

/** A stored picture: its public address, and its key to remove it when no contact takes it. */
export interface StoredAvatar {
  url: string;
  key: string;
}

/** A stored picture ready to serve. */
export interface ServedAvatar extends StoredFile {
  contentType: string;
}

/**
 * Contacts' pictures, copied from the providers' profiles into the file store (their URLs expire
 * within days). Each is served publicly at `${PUBLIC_URL}/files/avatars/<business>/<name>`, where
 * the name holds 128 random bits: the address is the permission, as a provider's CDN URL is, so it
 * works in an `<img>` of any page the business builds.
 */
export class AvatarStore {
  constructor(
    private readonly storage: FileStorage,
    private readonly publicUrl: string,
  ) {}

  /** Keeps a fetched picture; refuses (AvatarRefused) one that is not a PNG, JPEG, GIF or WebP image, or too large. */
  async store(businessId: string, fetched: FetchedMedia): Promise<StoredAvatar> {
    if (fetched.bytes.length > AVATAR_MAX_BYTES)
      throw new AvatarRefused(`the profile picture is larger than ${AVATAR_MAX_BYTES} bytes`);
    const declared = fetched.mimeType.split(';')[0].trim().toLowerCase();
    const detected = declared.startsWith('image/') ? await fileTypeFromBuffer(fetched.bytes) : undefined;
    const extension = detected ? IMAGE_TYPES[detected.mime] : undefined;
    if (!detected || !extension)
      throw new AvatarRefused(`the profile picture is not a PNG, JPEG, GIF or WebP image (${declared || 'no type'})`);
    const name = `${randomBytes(16).toString('base64url')}.${extension}`;
    const key = `${businessId}/avatars/${name}`;
    await this.storage.put(key, fetched.bytes, detected.mime);
    return { url: `${this.publicUrl}/files/avatars/${businessId}/${name}`, key };
  }

  /** Removes a stored picture that no contact took (one got a picture meanwhile). */
  discard(avatar: StoredAvatar): Promise<void> {
    return this.storage.delete(avatar.key);
  }

  /** The picture behind a public address; 404 when none is stored under it. */
  async open(businessId: string, name: string): Promise<ServedAvatar> {
    const extension = AVATAR_FILE.exec(name)?.[1];
    const file = extension ? await this.storage.get(`${businessId}/avatars/${name}`) : undefined;
    if (!extension || !file) throw notFound('file');
    return { ...file, contentType: CONTENT_TYPES[extension] };
  }
}

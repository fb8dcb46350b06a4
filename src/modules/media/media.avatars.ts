import { randomBytes } from 'node:crypto';
import type { FetchedMedia } from '../../channels/provider.ts';
import { notFound } from '../../lib/domain-errors.ts';
import type { FileStorage, StoredFile } from '../../storage/file-storage.ts';

/** The largest profile picture kept; Meta's are some tens of kilobytes. */
export const AVATAR_MAX_BYTES = 1024 * 1024;

/**
 * The picture types kept, by the extension their file names carry, each with the first bytes its
 * files start with: a body must be what its content type says, and nothing a browser would run
 * (SVG, HTML) is ever served from our origin as a contact's picture.
 */
const IMAGE_TYPES: Record<string, { contentType: string; starts: (bytes: Buffer) => boolean }> = {
  png: { contentType: 'image/png', starts: (b) => b.subarray(0, 8).equals(Buffer.from('89504e470d0a1a0a', 'hex')) },
  jpg: { contentType: 'image/jpeg', starts: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  gif: { contentType: 'image/gif', starts: (b) => /^GIF8[79]a$/.test(b.subarray(0, 6).toString('latin1')) },
  webp: {
    contentType: 'image/webp',
    starts: (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  },
};

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
    const extension = Object.keys(IMAGE_TYPES).find((ext) => IMAGE_TYPES[ext].contentType === declared);
    if (!extension || !IMAGE_TYPES[extension].starts(fetched.bytes))
      throw new AvatarRefused(`the profile picture is not a PNG, JPEG, GIF or WebP image (${declared || 'no type'})`);
    const name = `${randomBytes(16).toString('base64url')}.${extension}`;
    const key = `${businessId}/avatars/${name}`;
    await this.storage.put(key, fetched.bytes, IMAGE_TYPES[extension].contentType);
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
    return { ...file, contentType: IMAGE_TYPES[extension].contentType };
  }
}

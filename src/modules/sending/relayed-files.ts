import { fileTypeFromBuffer } from 'file-type';
import type { MediaKind } from '../../channels/channel.types.ts';

/** Images every channel that sends images shows; other image formats go as documents. */
const IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/**
 * What a file of a relayed reply is sent as, read from its bytes by file-type (as the widget's
 * uploads are): what the helpdesk or its download declared is not trusted, since the file is served
 * again from the service's own address. Bytes it cannot name go as a document of no known type.
 */
export async function relayedFileType(bytes: Buffer): Promise<{ contentType: string; kind: MediaKind }> {
  const contentType = (await fileTypeFromBuffer(bytes))?.mime ?? 'application/octet-stream';
  const kind: MediaKind = IMAGES.has(contentType)
    ? 'image'
    : contentType.startsWith('video/')
      ? 'video'
      : contentType.startsWith('audio/')
        ? 'audio'
        : 'document';
  return { contentType, kind };
}

import { fileTypeFromBuffer } from 'file-type';
import type { MediaKind } from '../../channels/channel.types.ts';
import { DomainError } from '../../lib/domain-errors.ts';

/** A file as the visitor's browser sent it. */
export interface Upload {
  bytes: Buffer;
  filename: string | null;
}

/** The largest file a visitor may send. */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

/** What a visitor may send, by the type its bytes show, and the kind of message each makes. */
export const UPLOAD_TYPES: Readonly<Record<string, MediaKind>> = {
  'image/png': 'image',
  'image/jpeg': 'image',
  'image/gif': 'image',
  'image/webp': 'image',
  'application/pdf': 'document',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'document',
  'audio/mpeg': 'audio',
  'audio/ogg': 'audio',
  'audio/x-m4a': 'audio',
  'video/mp4': 'video',
  'video/webm': 'video',
};

/**
 * The type of an upload, read from its bytes by file-type: what the browser declares is the
 * visitor's word, and a page that renders a file by its declared type would trust it. 415 for any
 * other type, 400 for an empty file.
 */
export async function acceptedUpload(upload: Upload): Promise<{ contentType: string; kind: MediaKind }> {
  if (upload.bytes.length === 0) throw new DomainError('invalid', 'validation_error', 'the file is empty');
  const detected = await fileTypeFromBuffer(upload.bytes);
  const kind = detected ? UPLOAD_TYPES[detected.mime] : undefined;
  if (!detected || !kind)
    throw new DomainError(
      'unsupported',
      'unsupported_file_type',
      `files of this type cannot be sent here; allowed: ${Object.keys(UPLOAD_TYPES).join(', ')}`,
    );
  return { contentType: detected.mime, kind };
}

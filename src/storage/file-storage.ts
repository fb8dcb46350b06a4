import type { Readable } from 'node:stream';

/** A stored file, opened for reading. */
export interface StoredFile {
  stream: Readable;
  size: number;
}

/**
 * Where the service keeps files (fetched media). Keys are relative paths made of safe segments
 * (`<business>/<media>`); implementations: the filesystem under DATA_DIR, memory, and an
 * S3-compatible bucket.
 */
export interface FileStorage {
  /** Stores the bytes under `key`, replacing what was there; readers never see a half-written file. */
  put(key: string, data: Buffer | Readable, contentType: string): Promise<{ size: number }>;
  /** The file, or undefined when nothing is stored under `key`. */
  get(key: string): Promise<StoredFile | undefined>;
  /** Removes the file; a missing file is not an error. */
  delete(key: string): Promise<void>;
}

const SAFE_KEY = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_.-]+)*$/;

/** Refuses keys that could leave the storage root (`..`, absolute paths, odd characters). */
export function checkStorageKey(key: string): string {
  if (!SAFE_KEY.test(key) || key.split('/').some((part) => part === '.' || part === '..')) {
    throw new Error(`invalid storage key: ${key}`);
  }
  return key;
}

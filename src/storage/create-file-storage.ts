import { join } from 'node:path';
import type { S3StorageConfig } from '../config.ts';
import type { FileStorage } from './file-storage.ts';
import { FsFileStorage } from './fs-storage.ts';
import { MemoryFileStorage } from './memory-storage.ts';
import { S3FileStorage } from './s3-storage.ts';

export type { FileStorage, StoredFile } from './file-storage.ts';

/**
 * The file store: the S3-compatible bucket when one is configured, else `${dataDir}/media` on disk,
 * or memory for `memory://`.
 */
export function createFileStorage(dataDir: string, s3?: S3StorageConfig): FileStorage {
  if (s3) return new S3FileStorage(s3);
  return dataDir === 'memory://' ? new MemoryFileStorage() : new FsFileStorage(join(dataDir, 'media'));
}

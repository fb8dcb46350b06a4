import { join } from 'node:path';
import type { FileStorage } from './file-storage.ts';
import { FsFileStorage } from './fs-storage.ts';
import { MemoryFileStorage } from './memory-storage.ts';

export type { FileStorage, StoredFile } from './file-storage.ts';

/** The file store for a data directory: `${dataDir}/media` on disk, or memory for `memory://`. */
export function createFileStorage(dataDir: string): FileStorage {
  return dataDir === 'memory://' ? new MemoryFileStorage() : new FsFileStorage(join(dataDir, 'media'));
}

import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkStorageKey, type FileStorage, type StoredFile } from './file-storage.ts';

/** Files on the local filesystem under one root directory (`${DATA_DIR}/media`). */
export class FsFileStorage implements FileStorage {
  constructor(private readonly root: string) {}

  private path(key: string): string {
    return join(this.root, checkStorageKey(key));
  }

  async put(key: string, data: Buffer | Readable, _contentType: string): Promise<{ size: number }> {
    const target = this.path(key);
    await mkdir(dirname(target), { recursive: true });
    // Written beside the target and renamed over it: a reader sees the old file or the new one.
    const temp = `${target}.${randomBytes(6).toString('hex')}.part`;
    try {
      await pipeline(Buffer.isBuffer(data) ? Readable.from([data]) : data, createWriteStream(temp, { mode: 0o600 }));
      await rename(temp, target);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    return { size: (await stat(target)).size };
  }

  async get(key: string): Promise<StoredFile | undefined> {
    const path = this.path(key);
    try {
      const { size } = await stat(path);
      return { stream: createReadStream(path), size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }
}

import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { checkStorageKey, type FileStorage, type StoredFile } from './file-storage.ts';

/** Files kept in process memory: the store of `DATA_DIR=memory://`, which keeps nothing on disk. */
export class MemoryFileStorage implements FileStorage {
  private readonly files = new Map<string, Buffer>();

  async put(key: string, data: Buffer | Readable, _contentType: string): Promise<{ size: number }> {
    const bytes = Buffer.isBuffer(data) ? Buffer.from(data) : await buffer(data);
    this.files.set(checkStorageKey(key), bytes);
    return { size: bytes.length };
  }

  async get(key: string): Promise<StoredFile | undefined> {
    const bytes = this.files.get(checkStorageKey(key));
    return bytes && { stream: Readable.from([bytes]), size: bytes.length };
  }

  async delete(key: string): Promise<void> {
    this.files.delete(checkStorageKey(key));
  }
}

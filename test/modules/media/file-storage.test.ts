import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterAll, describe, expect, it } from 'vitest';
import { createFileStorage } from '../../../src/storage/create-file-storage.ts';
import type { FileStorage } from '../../../src/storage/file-storage.ts';
import { FsFileStorage } from '../../../src/storage/fs-storage.ts';
import { MemoryFileStorage } from '../../../src/storage/memory-storage.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'media-storage-'));
  dirs.push(dir);
  return dir;
}

describe.each([
  ['filesystem', async (): Promise<FileStorage> => createFileStorage(await tempDir())],
  ['memory', async (): Promise<FileStorage> => createFileStorage('memory://')],
])('%s file storage', (_name, make) => {
  it('stores, replaces, reads and deletes files by key', async () => {
    const storage = await make();
    expect(await storage.put('biz/1', Buffer.from('first'), 'text/plain')).toEqual({ size: 5 });
    expect(
      await storage.put('biz/1', Readable.from([Buffer.from('second '), Buffer.from('version')]), 'text/plain'),
    ).toEqual({ size: 14 });
    const file = await storage.get('biz/1');
    expect(file?.size).toBe(14);
    expect((await buffer(file!.stream)).toString()).toBe('second version');
    expect(await storage.get('biz/2')).toBeUndefined();
    await storage.delete('biz/1');
    await storage.delete('biz/1');
    expect(await storage.get('biz/1')).toBeUndefined();
  });

  it('refuses keys that could leave its root', async () => {
    const storage = await make();
    for (const key of ['../x', 'a/../../x', '/etc/passwd', 'a//b', '', 'a/./b', 'a\\b']) {
      await expect(storage.put(key, Buffer.from('x'), 'text/plain'), key).rejects.toThrow('invalid storage key');
    }
  });
});

describe('filesystem file storage', () => {
  it('keeps files under DATA_DIR/media and leaves no partial files behind', async () => {
    const dir = await tempDir();
    const storage = createFileStorage(dir);
    expect(storage).toBeInstanceOf(FsFileStorage);
    await storage.put('b1/7', Buffer.from('bytes'), 'application/octet-stream');
    expect(await readdir(join(dir, 'media', 'b1'))).toEqual(['7']);
    const failing = new Readable({
      read() {
        this.destroy(new Error('source broke'));
      },
    });
    await expect(storage.put('b1/8', failing, 'application/octet-stream')).rejects.toThrow('source broke');
    expect(await readdir(join(dir, 'media', 'b1'))).toEqual(['7']);
  });

  it('is kept in memory for DATA_DIR=memory://', () => {
    expect(createFileStorage('memory://')).toBeInstanceOf(MemoryFileStorage);
  });
});

import { GetObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileStorage } from '../../../src/storage/create-file-storage.ts';
import type { FileStorage } from '../../../src/storage/file-storage.ts';
import { FsFileStorage } from '../../../src/storage/fs-storage.ts';
import { MemoryFileStorage } from '../../../src/storage/memory-storage.ts';
import { S3FileStorage } from '../../../src/storage/s3-storage.ts';
import { startS3Server, type TestS3Server } from '../../helpers/s3-server.ts';

const dirs: string[] = [];
let s3: TestS3Server;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'media-storage-'));
  dirs.push(dir);
  return dir;
}

/** A stream that gives `good` bytes, then fails. */
function breakingAfter(good: Buffer): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (sent) this.destroy(new Error('source broke'));
      else {
        sent = true;
        this.push(good);
      }
    },
  });
}

/** Past the 5 MiB of one part of an S3 multipart upload. */
const LARGE = 6 * 1024 * 1024 + 17;

describe.each([
  ['filesystem', async (): Promise<FileStorage> => createFileStorage(await tempDir())],
  ['memory', async (): Promise<FileStorage> => createFileStorage('memory://')],
  // Each store under its own prefix of the one bucket, as deployments sharing a bucket are.
  [
    'S3',
    async (): Promise<FileStorage> => createFileStorage('memory://', s3.config(`t${randomBytes(4).toString('hex')}`)),
  ],
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

  it('streams a file larger than one upload part, and keeps empty files', async () => {
    const storage = await make();
    const bytes = randomBytes(LARGE);
    const chunks = Array.from({ length: Math.ceil(LARGE / 65536) }, (_, i) =>
      bytes.subarray(i * 65536, (i + 1) * 65536),
    );
    expect(await storage.put('biz/received/large', Readable.from(chunks), 'application/octet-stream')).toEqual({
      size: LARGE,
    });
    const file = await storage.get('biz/received/large');
    expect(file?.size).toBe(LARGE);
    expect((await buffer(file!.stream)).equals(bytes)).toBe(true);
    expect(await storage.put('biz/empty', Buffer.alloc(0), 'text/plain')).toEqual({ size: 0 });
    const empty = await storage.get('biz/empty');
    expect(empty?.size).toBe(0);
    expect((await buffer(empty!.stream)).length).toBe(0);
  });

  it('keeps the earlier file whole when a write fails midway, however far the source got', async () => {
    const storage = await make();
    await storage.put('biz/3', Buffer.from('kept'), 'text/plain');
    await expect(storage.put('biz/3', breakingAfter(Buffer.from('half')), 'text/plain')).rejects.toThrow(
      'source broke',
    );
    // Past one part: on S3 the multipart upload has begun, and is aborted (s3rver has no abort: the
    // source's failure is told all the same).
    await expect(storage.put('biz/3', breakingAfter(randomBytes(LARGE)), 'text/plain')).rejects.toThrow('source broke');
    await expect(storage.put('biz/4', breakingAfter(Buffer.from('new')), 'text/plain')).rejects.toThrow('source broke');
    const file = await storage.get('biz/3');
    expect((await buffer(file!.stream)).toString()).toBe('kept');
    expect(await storage.get('biz/4')).toBeUndefined();
  });

  it('refuses keys that could leave its root', async () => {
    const storage = await make();
    for (const key of ['../x', 'a/../../x', '/etc/passwd', 'a//b', '', 'a/./b', 'a\\b']) {
      await expect(storage.put(key, Buffer.from('x'), 'text/plain'), key).rejects.toThrow('invalid storage key');
      await expect(storage.get(key), key).rejects.toThrow('invalid storage key');
      await expect(storage.delete(key), key).rejects.toThrow('invalid storage key');
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
    await expect(storage.put('b1/8', breakingAfter(Buffer.from('x')), 'application/octet-stream')).rejects.toThrow(
      'source broke',
    );
    expect(await readdir(join(dir, 'media', 'b1'))).toEqual(['7']);
  });

  it('is kept in memory for DATA_DIR=memory://', () => {
    expect(createFileStorage('memory://')).toBeInstanceOf(MemoryFileStorage);
  });
});

describe('S3 file storage', () => {
  const read = (key: string) =>
    s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key })).catch((err: Error) => err.name);

  it('is chosen by S3_BUCKET over DATA_DIR, and keeps each key under its prefix with its content type', async () => {
    const storage = createFileStorage(await tempDir(), s3.config('prod/eu'));
    expect(storage).toBeInstanceOf(S3FileStorage);
    await storage.put('b1/avatars/pic.png', Buffer.from('png'), 'image/png');
    const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'prod/eu/b1/avatars/pic.png' }));
    expect(object.ContentType).toBe('image/png');
    expect(await object.Body!.transformToString()).toBe('png');
    expect(await read('b1/avatars/pic.png')).toBe('NoSuchKey');
    // Without a prefix, keys are the bucket's own.
    await createFileStorage('memory://', s3.config()).put('b2/9', Buffer.from('x'), 'text/plain');
    expect(
      await (await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'b2/9' }))).Body!.transformToString(),
    ).toBe('x');
  });

  it('fails, never answering "no such file", when the bucket is missing or refuses the keys; the secret is never told', async () => {
    const secret = 'the-secret-that-stays-out-of-errors';
    const wrongKey = new S3FileStorage({
      ...s3.config(),
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: secret },
    });
    const failures = [
      await wrongKey.get('b1/1').catch((err: Error) => err),
      await wrongKey.put('b1/1', Buffer.from('x'), 'text/plain').catch((err: Error) => err),
      await wrongKey.delete('b1/1').catch((err: Error) => err),
    ];
    for (const err of failures) {
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(
        /^S3 could not (read|store|delete) b1\/1: SignatureDoesNotMatch \(HTTP 403\)/,
      );
      expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).not.toContain(secret);
    }
    const noBucket = new S3FileStorage({ ...s3.config(), bucket: 'missing' });
    await expect(noBucket.get('b1/1')).rejects.toThrow(/^S3 could not read b1\/1: NoSuchBucket \(HTTP 404\)/);
  });

  it('opens a file while more than 50 others are open and unread (slow downloads)', async () => {
    const storage = createFileStorage('memory://', s3.config(`t${randomBytes(4).toString('hex')}`));
    // Larger than what the sockets' buffers take in: the server cannot finish an unread one.
    await storage.put('b1/1', randomBytes(4 * 1024 * 1024), 'application/octet-stream');
    const opening = Array.from({ length: 60 }, () => storage.get('b1/1'));
    const opened = await Promise.race([
      Promise.all(opening),
      // Without the fix the opening never ends; a loaded machine may take seconds to finish it.
      new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 15_000)),
    ]);
    for (const file of await Promise.all(opening)) file!.stream.destroy();
    expect(opened).not.toBe('waiting');
  });

  it('sends no checksum headers S3 does not require (R2 and B2 refuse them), on single and multipart uploads', async () => {
    // A proxy on loopback that records each request's headers on its way to s3rver.
    const seen: string[][] = [];
    const target = new URL(s3.endpoint);
    const proxy = createServer((req, res) => {
      seen.push(Object.keys(req.headers));
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = proxy.address() as AddressInfo;
      const storage = new S3FileStorage({ ...s3.config('checksums'), endpoint: `http://127.0.0.1:${port}` });
      await storage.put('b1/small', Buffer.from('x'), 'text/plain');
      await storage.put('b1/large', Readable.from([randomBytes(LARGE)]), 'application/octet-stream');
      await buffer((await storage.get('b1/large'))!.stream);
      expect(seen.length).toBeGreaterThanOrEqual(5); // PUT; create, 2 parts, complete; GET
      expect(seen.flat().filter((name) => /^x-amz-(sdk-)?checksum/.test(name))).toEqual([]);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('fails when the server cannot be reached', async () => {
    const unreachable = new S3FileStorage({ ...s3.config(), endpoint: 'http://127.0.0.1:9' });
    await expect(unreachable.get('b1/1')).rejects.toThrow(/^S3 could not read b1\/1: .*ECONNREFUSED/);
  });
});

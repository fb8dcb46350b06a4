import { DeleteObjectCommand, GetObjectCommand, NoSuchKey, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { Readable } from 'node:stream';
import type { S3StorageConfig } from '../config.ts';
import { checkStorageKey, type FileStorage, type StoredFile } from './file-storage.ts';

/**
 * Files in an S3-compatible bucket (AWS, MinIO, R2, Garage), under the configured key prefix, so that
 * processes on different machines share them. Our server still serves every file at its own
 * addresses (signed `/files/...`, avatars): the bucket needs no public access.
 */
export class S3FileStorage implements FileStorage {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(config: S3StorageConfig) {
    this.bucket = config.bucket;
    this.prefix = config.keyPrefix === '' ? '' : `${config.keyPrefix}/`;
    this.client = new S3Client({
      endpoint: config.endpoint,
      region: config.region,
      credentials: config.credentials,
      forcePathStyle: config.forcePathStyle,
      // Checksums only where the API requires them: some S3-compatible stores (R2, Backblaze B2,
      // older MinIO) refuse the CRC32 checksum headers the SDK otherwise adds to every upload. The
      // bytes in transit rest on TCP's and TLS's checks, as those of every other call of the service.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A store that cannot be reached fails fast rather than holding a download or a job. A download
      // streams at the pace of its client and holds its connection meanwhile: connections are not
      // capped (the SDK's 50 would make every download wait behind 50 slow readers), and one left
      // idle a minute (a client that stopped reading) is closed.
      requestHandler: {
        connectionTimeout: 5_000,
        socketTimeout: 60_000,
        httpAgent: { maxSockets: Infinity },
        httpsAgent: { maxSockets: Infinity },
      },
    });
  }

  private key(key: string): string {
    return this.prefix + checkStorageKey(key);
  }

  async put(key: string, data: Buffer | Readable, contentType: string): Promise<{ size: number }> {
    const target = this.key(key);
    let size = 0;
    let sourceFailure: Error | undefined;
    // The SDK's managed upload: one PutObject for a small body, a multipart upload (aborted on failure)
    // for a stream past one part. Either way the object appears whole or not at all. One part in
    // flight keeps a stream's memory to one part (5 MiB).
    const body = Buffer.isBuffer(data)
      ? data
      : Readable.from(
          counted(
            data,
            (n) => (size += n),
            (err) => (sourceFailure = err),
          ),
        );
    const upload = new Upload({
      client: this.client,
      queueSize: 1,
      params: { Bucket: this.bucket, Key: target, Body: body, ContentType: contentType },
    });
    try {
      await upload.done();
    } catch (err) {
      // The source's failure is the one to tell, also when the abort of a begun multipart upload
      // failed after it (the bucket's lifecycle rule for incomplete uploads removes those parts).
      throw sourceFailure ?? storageError('store', target, err);
    }
    return { size: Buffer.isBuffer(data) ? data.length : size };
  }

  async get(key: string): Promise<StoredFile | undefined> {
    const target = this.key(key);
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: target }));
      return { stream: object.Body as Readable, size: object.ContentLength ?? 0 };
    } catch (err) {
      // A missing key; NoSuchBucket is a misconfiguration and stays an error.
      if (err instanceof NoSuchKey) return undefined;
      throw storageError('read', target, err);
    }
  }

  async delete(key: string): Promise<void> {
    const target = this.key(key);
    try {
      // S3 answers a removal of a missing key as a success.
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: target }));
    } catch (err) {
      throw storageError('delete', target, err);
    }
  }
}

/** The chunks of `source`, counted, with its failure noted before it goes on up. */
async function* counted(
  source: Readable,
  add: (bytes: number) => void,
  failed: (err: Error) => void,
): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of source) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      add(bytes.length);
      yield bytes;
    }
  } catch (err) {
    failed(err as Error);
    throw err;
  }
}

/**
 * The store's failure, named by bucket key and S3's error code: the SDK's error carries the request's
 * metadata, which has no place in our logs. A network failure keeps its cause (an address, a code).
 */
function storageError(action: string, key: string, err: unknown): Error {
  if (err instanceof S3ServiceException) {
    const status = err.$metadata.httpStatusCode;
    return new Error(`S3 could not ${action} ${key}: ${err.name}${status ? ` (HTTP ${status})` : ''}: ${err.message}`);
  }
  return new Error(`S3 could not ${action} ${key}: ${(err as Error).message}`, { cause: err });
}

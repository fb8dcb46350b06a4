import type { S3Client } from '@aws-sdk/client-s3';
import type { Upload } from '@aws-sdk/lib-storage';
import { Readable } from 'node:stream';
import type { S3StorageConfig } from '../config.ts';
import { checkStorageKey, type FileStorage, type StoredFile } from './file-storage.ts';

type ClientModule = typeof import('@aws-sdk/client-s3');

interface Sdk {
  s3: ClientModule;
  Upload: typeof Upload;
  client: S3Client;
}

/**
 * Files in an S3-compatible bucket (AWS, MinIO, R2, Garage), under the configured key prefix, so that
 * processes on different machines share them. Our server still serves every file at its own
 * addresses (signed `/files/...`, avatars): the bucket needs no public access.
 */
export class S3FileStorage implements FileStorage {
  private readonly sdk: Promise<Sdk>;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(config: S3StorageConfig) {
    this.bucket = config.bucket;
    this.prefix = config.keyPrefix === '' ? '' : `${config.keyPrefix}/`;
    // Loaded only where a bucket is configured: the SDK costs a process about 20 MB of memory and
    // some hundreds of milliseconds to load.
    this.sdk = Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]).then(([s3, lib]) => ({
      s3,
      Upload: lib.Upload,
      client: createClient(s3, config),
    }));
    // A failed load is told by every call; this start has no caller to tell.
    this.sdk.catch(() => {});
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
    const { Upload, client } = await this.sdk;
    const upload = new Upload({
      client,
      queueSize: 1,
      params: { Bucket: this.bucket, Key: target, Body: body, ContentType: contentType },
    });
    try {
      await upload.done();
    } catch (err) {
      // The source's failure is the one to tell, also when the abort of a begun multipart upload
      // failed after it (the bucket's lifecycle rule for incomplete uploads removes those parts).
      throw sourceFailure ?? storageError(await this.sdk, 'store', target, err);
    }
    return { size: Buffer.isBuffer(data) ? data.length : size };
  }

  async get(key: string): Promise<StoredFile | undefined> {
    const target = this.key(key);
    const sdk = await this.sdk;
    try {
      const object = await sdk.client.send(new sdk.s3.GetObjectCommand({ Bucket: this.bucket, Key: target }));
      return { stream: object.Body as Readable, size: object.ContentLength ?? 0 };
    } catch (err) {
      // A missing key; NoSuchBucket is a misconfiguration and stays an error.
      if (err instanceof sdk.s3.NoSuchKey) return undefined;
      throw storageError(sdk, 'read', target, err);
    }
  }

  async delete(key: string): Promise<void> {
    const target = this.key(key);
    const sdk = await this.sdk;
    try {
      // S3 answers a removal of a missing key as a success.
      await sdk.client.send(new sdk.s3.DeleteObjectCommand({ Bucket: this.bucket, Key: target }));
    } catch (err) {
      throw storageError(sdk, 'delete', target, err);
    }
  }
}

function createClient(s3: ClientModule, config: S3StorageConfig): S3Client {
  return new s3.S3Client({
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
function storageError({ s3 }: Sdk, action: string, key: string, err: unknown): Error {
  if (err instanceof s3.S3ServiceException) {
    const status = err.$metadata.httpStatusCode;
    return new Error(`S3 could not ${action} ${key}: ${err.name}${status ? ` (HTTP ${status})` : ''}: ${err.message}`);
  }
  return new Error(`S3 could not ${action} ${key}: ${(err as Error).message}`, { cause: err });
}

import S3rver from '@20minutes/s3rver';
import { S3Client } from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3StorageConfig } from '../../src/config.ts';

/** An S3-compatible server on loopback, with one bucket, and what to configure to use it. */
export interface TestS3Server {
  endpoint: string;
  bucket: string;
  /** The settings of a store in the bucket, under `keyPrefix`. */
  config(keyPrefix?: string): S3StorageConfig;
  /** The environment variables that select the bucket. */
  env(keyPrefix?: string): Record<string, string>;
  /** A client of the server, to look into the bucket behind the store's back. */
  client: S3Client;
  close(): Promise<void>;
}

// s3rver's only account.
const ACCESS_KEY_ID = 'S3RVER';
const SECRET_ACCESS_KEY = 'S3RVER';

/**
 * s3rver: a Node server speaking S3's wire format (signatures V4, multipart uploads, S3's XML errors),
 * keeping its objects in a temporary directory.
 */
export async function startS3Server(bucket = 'media'): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const config = (keyPrefix = ''): S3StorageConfig => ({
    bucket,
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY },
    forcePathStyle: true,
    keyPrefix,
  });
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    credentials: config().credentials,
    forcePathStyle: true,
  });
  return {
    endpoint,
    bucket,
    config,
    env: (keyPrefix = '') => ({
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_ACCESS_KEY_ID: ACCESS_KEY_ID,
      S3_SECRET_ACCESS_KEY: SECRET_ACCESS_KEY,
      S3_FORCE_PATH_STYLE: 'true',
      ...(keyPrefix ? { S3_KEY_PREFIX: keyPrefix } : {}),
    }),
    client,
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

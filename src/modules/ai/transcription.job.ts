import { buffer } from 'node:stream/consumers';
import type { Db } from '../../db/database.ts';
import { enqueueJobs, repeatableTries, type JobHandler, type JobOutcome } from '../../jobs/outbox.worker.ts';
import { outboxRepository, type OutboxJob } from '../../jobs/outbox.repository.ts';
import type { FileStorage } from '../../storage/file-storage.ts';
import { messagesChanged } from '../domain-events/domain-events.writer.ts';
import type { AfterFetch } from '../media/media.fetch-job.ts';
import { mediaRepository } from '../media/media.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import type { Transcriber } from './llm-client.ts';

/** The outbox kind of a call recording's transcription; `ref_id` is the message id. */
export const TRANSCRIPTION_JOB = 'transcription';

/** The message type whose recordings are transcribed: a phone call's. */
const TRANSCRIBED_TYPE = 'voice';

/** 5 tries: about 8 minutes in all (the client retries each call too). */
const tries = repeatableTries(5);

/**
 * Queues the transcription of a call's recording in the commit that stores its file (the media
 * job's AfterFetch): never before the bytes are there, and never inline in the webhook.
 */
export function transcriptionAfterFetch(wake: () => void): AfterFetch {
  return {
    async queue(trx, businessId, messageId) {
      if ((await messagesRepository.typeOf(trx, businessId, messageId)) !== TRANSCRIBED_TYPE) return false;
      await enqueueJobs(trx, [{ businessId, kind: TRANSCRIPTION_JOB, refId: messageId }]);
      return true;
    },
    wake,
  };
}

/**
 * Transcribes the stored recording of a call's message through the model's speech-to-text and keeps
 * the text as the message's transcript (metadata.transcript, and its text when empty), in the commit
 * that ends the job. Safe to run again: the same transcript is written again.
 */
export function transcriptionJobHandler(db: Db, storage: FileStorage, transcriber: Transcriber): JobHandler {
  async function handle(job: OutboxJob): Promise<JobOutcome> {
    const files = await mediaRepository.forMessages(db, job.business_id, [job.ref_id]);
    const recording = files.find((f) => f.storage_key !== null && f.content_type?.startsWith('audio/'));
    if (!recording) return { failed: 'the message has no stored recording' };
    const stored = await storage.get(recording.storage_key!);
    if (!stored) return tries.afterFailure(job, true, `the file of media ${recording.id} is missing`);
    let transcript: string;
    try {
      transcript = await transcriber.transcribe({
        bytes: await buffer(stored.stream),
        filename: recording.filename ?? `recording-${recording.id}.mp3`,
        contentType: recording.content_type ?? 'audio/mpeg',
      });
    } catch (err) {
      return tries.afterFailure(job, true, (err as Error).message);
    }
    await db.transaction().execute(async (trx) => {
      if (await messagesRepository.setTranscript(trx, job.business_id, job.ref_id, transcript))
        await messagesChanged(trx, job.business_id, [{ id: job.ref_id, change: 'transcript' }]);
      await outboxRepository.complete(trx, job);
    });
    return { done: true, recorded: true };
  }

  return { kind: TRANSCRIPTION_JOB, concurrency: 2, leaseSeconds: 120, handle, onAbandoned: tries.onAbandoned };
}

import type { Db, Engine } from '../../db/database.ts';
import type { DomainEventDispatcher } from '../domain-events/domain-events.dispatcher.ts';
import { notFound } from '../../lib/domain-errors.ts';
import { businessesRepository } from '../businesses/businesses.repository.ts';
import { ImportRun } from './import-run.ts';
import type { ImportRecord, ImportResult } from './import.schemas.ts';
import { readLines } from './line-reader.ts';

/** Longest accepted line; a longer one is reported as an error line and skipped. */
export const MAX_LINE_BYTES = 1024 * 1024;

/**
 * The NDJSON import: how businesses bring their history in and how benchmarks load data sets.
 * It streams: lines are read as the body arrives, checked, gathered into batches per table and
 * stored one batch per statement; reading never runs more than a batch ahead of storing, so
 * memory stays flat however large the file. It is not one transaction: what was stored stays
 * stored, and running the same file again skips the ids that exist and stores the rest.
 */
export class ImportService {
  /**
   * `parallel`: connections a batch is stored on at once. One PostgreSQL backend uses one core, so
   * a server with several connections stores groups of a batch side by side; the embedded engine
   * is one session, where 1 is right. `batchRows`: rows of a table in one statement, the engine's
   * slice (src/db/slices.ts): between two statements the other callers of the database get their
   * turn. `domainEvents`: hands the `contact_changed` events of the contacts created over before the
   * import answers.
   */
  constructor(
    private readonly db: Db,
    private readonly options: {
      engine?: Engine;
      parallel?: number;
      batchRows?: number;
      domainEvents?: Pick<DomainEventDispatcher, 'dispatch'>;
    } = {},
  ) {}

  /** Imports NDJSON records from a byte stream into one business. */
  async importNdjson(
    businessId: string,
    source: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  ): Promise<ImportResult> {
    if (!(await businessesRepository.find(this.db, businessId))) throw notFound('business');
    const { engine = 'pglite', parallel, batchRows } = this.options;
    const run = new ImportRun(this.db, businessId, MAX_LINE_BYTES, { engine, parallel, batchRows });
    // One batch is stored while the next is read and checked; never more than one at a time, so
    // reading waits for the database and memory holds at most two batches.
    let storing: Promise<void> = Promise.resolve();
    for await (const line of readLines(source, MAX_LINE_BYTES)) {
      if (run.add(line)) {
        await storing;
        storing = run.flush();
        storing.catch(() => {}); // awaited (and so thrown) at the next batch or at the end
      }
    }
    await storing;
    await run.flush();
    const result = run.result();
    if (result.imported.contacts > 0) await this.options.domainEvents?.dispatch(['contact_changed']);
    return result;
  }

  /** Imports records built in code (the demo data set) through the same path. */
  importRecords(businessId: string, records: ImportRecord[]): Promise<ImportResult> {
    return this.importNdjson(
      businessId,
      records.map((r) => `${JSON.stringify(r)}\n`),
    );
  }
}

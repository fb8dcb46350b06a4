import type { Db, Engine } from '../../db/database.ts';
import { nextTurn } from '../../db/slices.ts';
import { analyzeTable } from '../../db/statistics.ts';
import { contactsRepository, type ContactImportRow } from '../contacts/contacts.repository.ts';
import {
  conversationStoreRepository,
  type ConversationImportRow,
} from '../conversations/conversation-store.repository.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { eventsRepository, type EventImportRow } from '../events/events.repository.ts';
import { messagesRepository, type MessageImportRow } from '../messages/messages.repository.ts';
import type { Line } from './line-reader.ts';
import { parseLine } from './import.records.ts';
import { importRepository as repo, type ImportTable } from './import.repository.ts';
import type { ImportResult } from './import.schemas.ts';

/**
 * Rows per table and statement, unless the engine's slice says otherwise (src/db/slices.ts): large
 * enough to amortise a statement, small enough to keep memory flat. Messages are most of any file,
 * but 5 000 a statement made the embedded engine's memory peak past 300 MB (301 MB through 1 200 000
 * records, 277 MB at 1 000: its heap keeps its largest size), for 10% more records/s on PostgreSQL
 * (29 249 against 26 173/s; docs/PERFORMANCE-CHOICES.md#import-batches-and-statistics). On the embedded
 * engine a statement holds the only connection, so there the slice is smaller.
 */
export const DEFAULT_BATCH_ROWS = 1000;
/** Only the first errors are kept (a bad file must not fill memory); error_count counts them all. */
export const MAX_ERRORS_KEPT = 1000;
/**
 * Rows of a table stored by this run after which its statistics are refreshed; then every 4 times
 * as many. Plans kept per connection (the foreign-key checks, most likely) treat a table that was
 * empty when they were made as empty until its statistics change, and then every batch costs more
 * than the one before (measured: 10 000 records/s falling to 2 500/s within 700 000 records, back
 * to 18 000/s after one ANALYZE; docs/PERFORMANCE-CHOICES.md#import-batches-and-statistics). Autovacuum does not
 * keep up during a load.
 */
const FIRST_ANALYZE_ROWS = 2000;
/** How often a statement that lost a deadlock or serialization conflict is tried again. */
const CONFLICT_RETRIES = 3;

interface Rows {
  contacts: ContactImportRow;
  conversations: ConversationImportRow;
  messages: MessageImportRow;
  events: EventImportRow;
}
type Pending<T extends ImportTable> = { line: number; row: Rows[T] };

// Parents first: a record may refer to any record on an earlier line.
const TABLES: ImportTable[] = ['contacts', 'conversations', 'messages', 'events'];

/*
 * Each batch is one statement of the table's owner that answers how many rows went in. An id that
 * exists is skipped; any other unique violation (a duplicate external_id) fails the batch, and the
 * run stores it again row by row. A row whose parent is not this business's is left out (never a
 * failure): the run finds it as a row that does not exist afterwards (explainLeftOut).
 */
const inserters: { [T in ImportTable]: (db: Db, businessId: string, rows: Rows[T][]) => Promise<number> } = {
  contacts: insertContacts,
  conversations: (db, businessId, rows) => conversationStoreRepository.insertImported(db, businessId, rows),
  messages: (db, businessId, rows) => messagesRepository.insertImported(db, businessId, rows),
  events: (db, businessId, rows) => eventsRepository.insertImported(db, businessId, rows),
};

/**
 * Contacts go in with their `contact_changed` domain events (created), in one transaction: one
 * statement for the rows and one for the events of those that went in (an id that existed is skipped
 * and changes nothing).
 */
function insertContacts(db: Db, businessId: string, rows: ContactImportRow[]): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const ids = await contactsRepository.insertImported(trx, businessId, rows);
    await contactsChanged(trx, businessId, ids, 'created');
    return ids.length;
  });
}

/*
 * When batches are stored on several connections at once, each is split into groups that cannot
 * touch the same rows: messages by conversation (whose counters each group updates), the others by
 * id. Contacts stay one statement, so that two contacts with one external_id never race.
 */
const groupKey: { [T in ImportTable]: ((row: Rows[T]) => string) | undefined } = {
  contacts: undefined,
  conversations: (row) => row.id,
  messages: (row) => row.conversation_id,
  events: (row) => row.id,
};

function split<T extends ImportTable>(table: T, batch: Pending<T>[], parallel: number): Pending<T>[][] {
  const key = groupKey[table];
  if (!key || parallel <= 1 || batch.length < 2 * parallel) return [batch];
  const groups: Pending<T>[][] = Array.from({ length: parallel }, () => []);
  // Ids are lower-case UUIDs whose last hex digits vary from id to id (random bits or a counter).
  for (const p of batch) groups[parseInt(key(p.row).slice(-4), 16) % parallel].push(p);
  return groups.filter((g) => g.length > 0);
}

const isConflict = (err: unknown) => ['40P01', '40001'].includes((err as { code?: string }).code ?? '');

/** The errors a row itself can cause (SQLSTATE classes 22 data exception, 23 integrity violation). */
function rowErrorMessage(err: unknown, row: Rows[ImportTable]): string | undefined {
  const { code, constraint, message } = err as { code?: string; constraint?: string; message?: string };
  if (typeof code !== 'string' || !/^2[23]/.test(code)) return undefined;
  if (code === '23505' && (constraint === 'contacts_external_id' || message?.includes('contacts_external_id'))) {
    return `external_id ${JSON.stringify((row as ContactImportRow).external_id)} already belongs to another contact`;
  }
  return `record could not be stored: ${message ?? code}`;
}

/** The state of one import: rows waiting per table, counts, and errors. */
export class ImportRun {
  private pending: { [T in ImportTable]: Pending<T>[] } = { contacts: [], conversations: [], messages: [], events: [] };
  private readonly imported = { contacts: 0, conversations: 0, messages: 0, events: 0 };
  private readonly errors: { line: number; message: string }[] = [];
  private errorCount = 0;
  private readonly analyzeAt = {
    contacts: FIRST_ANALYZE_ROWS,
    conversations: FIRST_ANALYZE_ROWS,
    messages: FIRST_ANALYZE_ROWS,
    events: FIRST_ANALYZE_ROWS,
  };

  /**
   * `parallel`: connections a batch is stored on at once; `batchRows`: rows per table and
   * statement; `engine`: how the statistics of the tables it grows are refreshed (analyzeTable).
   */
  constructor(
    private readonly db: Db,
    private readonly businessId: string,
    private readonly maxLineBytes: number,
    private readonly options: { parallel?: number; batchRows?: number; engine: Engine },
  ) {}

  /** Takes one line; true when a batch is full and the caller must flush before reading on. */
  add(line: Line): boolean {
    if (line.text === undefined) {
      this.error(line.number, `line longer than ${this.maxLineBytes} bytes`);
      return false;
    }
    if (line.text.trim() === '') return false;
    const parsed = parseLine(line.text);
    if ('error' in parsed) {
      this.error(line.number, parsed.error);
      return false;
    }
    const queue = this.pending[parsed.table] as Pending<typeof parsed.table>[];
    queue.push({ line: line.number, row: parsed.row });
    return queue.length >= (this.options.batchRows ?? DEFAULT_BATCH_ROWS);
  }

  /**
   * Stores every row waiting now, parents before children. The batches are taken at once, so lines
   * read while they are stored wait for the next flush, after the parents they may refer to.
   */
  async flush(): Promise<void> {
    const batches = this.pending;
    this.pending = { contacts: [], conversations: [], messages: [], events: [] };
    for (const table of TABLES) {
      if (batches[table].length > 0)
        await Promise.all(
          split(table, batches[table], this.options.parallel ?? 1).map((group) => this.store(table, group)),
        );
      if (this.imported[table] >= this.analyzeAt[table]) {
        this.analyzeAt[table] = this.imported[table] * 4;
        await nextTurn();
        await analyzeTable(this.db, this.options.engine, table);
      }
    }
  }

  result(): ImportResult {
    return {
      imported: { ...this.imported },
      errors: [...this.errors].sort((a, b) => a.line - b.line),
      error_count: this.errorCount,
    };
  }

  private error(line: number, message: string): void {
    this.errorCount++;
    if (this.errors.length < MAX_ERRORS_KEPT) this.errors.push({ line, message });
  }

  private async insert<T extends ImportTable>(table: T, rows: Rows[T][]): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      // The requests that arrived during the previous statement take the connection first (nextTurn).
      await nextTurn();
      try {
        return await inserters[table](this.db, this.businessId, rows);
      } catch (err) {
        if (!isConflict(err) || attempt > CONFLICT_RETRIES) throw err;
      }
    }
  }

  private async store<T extends ImportTable>(table: T, batch: Pending<T>[]): Promise<void> {
    let inserted: number;
    try {
      inserted = await this.insert(
        table,
        batch.map((p) => p.row),
      );
    } catch (err) {
      if (batch.length === 1) {
        const message = rowErrorMessage(err, batch[0].row);
        if (!message) throw err; // not the row's fault (connection lost, ...): the import stops
        this.error(batch[0].line, message);
        return;
      }
      // One bad row fails its statement; row by row, the good rows of the batch still go in.
      for (const p of batch) await this.store(table, [p]);
      return;
    }
    this.imported[table] += inserted;
    if (inserted < batch.length && table !== 'contacts') await this.explainLeftOut(table, batch);
  }

  /**
   * A batch stored fewer rows than it had: each row left out either has an id that existed (skipped,
   * not an error) or a parent that does not exist. After the insert, the rows whose id is still not
   * there are the latter.
   */
  private async explainLeftOut<T extends ImportTable>(table: T, batch: Pending<T>[]): Promise<void> {
    const existing = await repo.existing(
      this.db,
      this.businessId,
      table,
      batch.map((p) => p.row.id),
    );
    const missing = batch.filter((p) => !existing.has(p.row.id));
    if (missing.length === 0) return;
    if (table === 'conversations') {
      const conversations = missing as Pending<'conversations'>[];
      const contacts = await repo.existing(
        this.db,
        this.businessId,
        'contacts',
        conversations.map((p) => p.row.contact_id),
      );
      for (const p of conversations) {
        this.error(
          p.line,
          contacts.has(p.row.contact_id)
            ? `channel ${p.row.channel_id} not found among the ${p.row.channel} channels of this business`
            : `contact ${p.row.contact_id} not found in this business`,
        );
      }
    } else if (table === 'messages') {
      for (const p of missing as Pending<'messages'>[])
        this.error(p.line, `conversation ${p.row.conversation_id} not found in this business`);
    } else if (table === 'events') {
      const events = missing as Pending<'events'>[];
      const contacts = await repo.existing(
        this.db,
        this.businessId,
        'contacts',
        events.map((p) => p.row.contact_id),
      );
      for (const p of events) {
        this.error(
          p.line,
          contacts.has(p.row.contact_id)
            ? `conversation ${p.row.conversation_id} not found among the conversations of contact ${p.row.contact_id}`
            : `contact ${p.row.contact_id} not found in this business`,
        );
      }
    }
  }
}

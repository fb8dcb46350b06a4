import { Duplex } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';

/**
 * node-postgres's socket to the embedded engine, in this process: what node-postgres writes goes
 * to PGlite as protocol bytes, and PGlite's answer comes back as bytes that node-postgres's own
 * parser reads, as from a server's socket (the startup included).
 *
 * It replaces PGlite's own node-postgres connection (`@electric-sql/pglite/node-postgres`), which
 * hands each message of a query (parse, bind, describe, execute, sync) to PGlite in a call of its
 * own and parses the answer with PGlite's JavaScript copy of the protocol parser before
 * node-postgres sees it. Here the messages written in one turn of the event loop (a whole query:
 * node-postgres writes them together) go in one call, and the answer is parsed once, by
 * node-postgres (docs/PERFORMANCE-CHOICES.md#pglite-through-node-postgres). No library offers this:
 * `@electric-sql/pglite-socket` serves PGlite over a TCP port, which would add the kernel's round
 * trip this avoids.
 *
 * PGlite runs a call to the end before returning (`execProtocolRawStream` is synchronous up to its
 * file-system sync, which the Node file system does not need: its writes go straight to the
 * files), so calls never interleave. PGlite is one session, so only one such socket may be open
 * on an instance at a time (the pool holds one client, database.ts).
 */
export class PgliteSocket extends Duplex {
  private pending: Buffer[] = [];
  private scheduled = false;

  constructor(private readonly pglite: PGlite) {
    super();
  }

  /** As net.Socket's: there is nothing to reach, so it is connected on the next tick. */
  connect(): this {
    process.nextTick(() => this.emit('connect'));
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  override _read(): void {
    // Answers are pushed as each call returns.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.pending.push(chunk);
    this.schedule();
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.push(null);
    callback();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.run());
  }

  /** Hands what was written since the last call to PGlite in one call, and pushes its answer. */
  private run(): void {
    this.scheduled = false;
    if (this.destroyed || this.pending.length === 0) return;
    const input = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
    this.pending = [];
    const output: Buffer[] = [];
    // The answer arrives as views of PGlite's memory, which the next call reuses: copied.
    this.pglite
      .execProtocolRawStream(input, { syncToFs: false, onRawData: (bytes) => output.push(Buffer.from(bytes)) })
      .then(
        () => {
          if (output.length > 0) this.push(output.length === 1 ? output[0] : Buffer.concat(output));
        },
        (error: unknown) => this.destroy(error instanceof Error ? error : new Error(String(error))),
      );
  }
}

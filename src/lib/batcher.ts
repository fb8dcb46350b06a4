/**
 * Groups work that arrives while earlier work is being written, so one transaction (and one
 * statement per step) serves many requests: an item waits only for the batches already running
 * (at most `maxRunning`), never for a timer, so a lone request is written at once (unless the
 * batcher gathers: `gatherMs`). When a batch fails, each of its items is run alone, so one bad
 * item fails only its own request.
 */
export class Batcher<T, R> {
  private queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private running = 0;
  private pumpScheduled = false;

  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    private readonly options: {
      maxRunning: number;
      maxItems: number;
      sizeOf?: (item: T) => number;
      /**
       * Start a batch this many milliseconds after its first item instead of at once (0: on the next
       * turn of the event loop), so that items submitted meanwhile share it: the jobs of one claim,
       * the answers read from one socket poll, or calls spread out by a pacer (a statement costs
       * far more than the few milliseconds each item waits).
       */
      gatherMs?: number;
    },
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      const { gatherMs } = this.options;
      if (gatherMs === undefined) return this.pump();
      if (this.pumpScheduled) return;
      this.pumpScheduled = true;
      const pump = () => {
        this.pumpScheduled = false;
        this.pump();
      };
      if (gatherMs === 0) setImmediate(pump);
      else setTimeout(pump, gatherMs);
    });
  }

  private pump(): void {
    while (this.running < this.options.maxRunning && this.queue.length > 0) {
      const batch = this.take();
      this.running++;
      void this.execute(batch).finally(() => {
        this.running--;
        // Items still gathering (their timer is set) are left to it, not taken at once.
        if (!this.pumpScheduled) this.pump();
      });
    }
  }

  /** The oldest queued items, up to maxItems in size (at least one). */
  private take() {
    const sizeOf = this.options.sizeOf ?? (() => 1);
    let size = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || size + sizeOf(this.queue[n].item) <= this.options.maxItems))
      size += sizeOf(this.queue[n++].item);
    return this.queue.splice(0, n);
  }

  private async execute(batch: typeof this.queue): Promise<void> {
    try {
      const results = await this.run(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(results[i]));
    } catch (err) {
      if (batch.length === 1) return batch[0].reject(err);
      for (const b of batch) {
        await this.run([b.item]).then(([r]) => b.resolve(r), b.reject);
      }
    }
  }
}

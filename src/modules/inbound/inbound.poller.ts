import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { readKinds } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import type { PollerConfig } from '../../config.ts';
import type { ChannelLinksService } from '../channels/channel-links.service.ts';
import type { ChannelRow, ChannelsService } from '../channels/channels.service.ts';
import { inboundCursorsRepository } from './inbound-cursors.repository.ts';
import { ChannelChanged, type InboundService } from './inbound.service.ts';

/** One channel being read here. */
interface Reading {
  businessId: string;
  configKey: string;
  abort: AbortController;
  done: Promise<void>;
}

/**
 * Reads the channels whose kind is polled (PollerTransport: IMAP mailboxes) or linked as a device
 * (SocketTransport.linked: WhatsApp Web, whose connection is held while it runs, with the link's
 * stored credentials): one `watch` of the adapter per channel, in the one process holding the
 * channel's lease (inbound_cursors), storing what it reads through InboundService.storePolled with
 * the adapter's cursor. Every `refreshMs` the channels are listed again: a new one starts, a
 * deleted one stops, a rotated one (another config) starts again with its new settings; a lease is
 * renewed, or taken over once its holder (a process that died) let it lapse; a watch that failed
 * (the server down) starts again.
 */
export class InboundPoller {
  private readonly holder = `${hostname()}:${process.pid}:${randomUUID()}`;
  private readonly readings = new Map<string, Reading>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly db: Db,
    private readonly channels: ChannelsService,
    private readonly inbound: InboundService,
    private readonly config: PollerConfig,
    private readonly links: ChannelLinksService,
  ) {}

  private log!: FastifyBaseLogger;

  /** A lease outlives a few missed renewals, and is taken over that long after its holder died. */
  private get leaseMs(): number {
    return Math.max(3 * this.config.refreshMs, 30_000);
  }

  start(log: FastifyBaseLogger): void {
    this.log = log;
    if (!this.stopped) return;
    this.stopped = false;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.config.refreshMs);
    this.timer.unref();
  }

  /** Lists the polled channels now and starts or stops their readings (also what the timer does). */
  refresh(): Promise<void> {
    this.refreshing ??= this.reconcile()
      .catch((err: unknown) => this.log.error({ err }, 'listing the polled channels failed'))
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** The channels this process reads now (for the logs and the tests). */
  readingChannels(): string[] {
    return [...this.readings.keys()];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.refreshing;
    await Promise.all([...this.readings.keys()].map((id) => this.end(id)));
  }

  private async reconcile(): Promise<void> {
    const kinds = readKinds().map((k) => k.entry.kind);
    const rows = await inboundCursorsRepository.channelsOfKinds(this.db, kinds);
    const listed = new Set(rows.map((r) => r.id));
    for (const id of [...this.readings.keys()]) if (!listed.has(id)) await this.end(id);
    for (const row of rows) {
      if (this.stopped) return;
      const configKey = JSON.stringify(row.provider_config);
      const reading = this.readings.get(row.id);
      if (reading && reading.configKey !== configKey) await this.end(row.id);
      const held = await inboundCursorsRepository.claim(this.db, row, this.holder, this.leaseMs);
      if (!held) {
        if (this.readings.has(row.id)) await this.end(row.id, false);
        continue;
      }
      if (!this.readings.has(row.id) && !this.stopped) this.begin(row, configKey, held.cursor);
    }
  }

  private begin(channel: ChannelRow, configKey: string, cursor: Record<string, unknown> | null): void {
    let provider: ReturnType<ChannelsService['providerFor']>;
    try {
      provider = this.channels.providerFor(channel);
    } catch (err) {
      // A config this version cannot read (written by another one): the other channels are read still.
      this.log.error({ channelId: channel.id, error: (err as Error).message }, 'a polled channel cannot be read');
      return;
    }
    const read = readKinds().find((k) => k.entry.kind === channel.provider_kind);
    if (!provider.watch || !read) return;
    const abort = new AbortController();
    const log = this.log.child({ channelId: channel.id, businessId: channel.business_id });
    const done = provider
      .watch(
        cursor,
        async ({ notification, cursor: next }) => {
          const stored = await this.inbound.storePolled(channel, notification, next, this.holder);
          if (stored === null)
            abort.abort(); // another process holds the channel now
          else if (stored.stored + stored.statuses > 0) log.debug({ ...stored }, 'polled channel read');
        },
        {
          signal: abort.signal,
          intervalMs: this.config.intervalMs ?? read.intervalMs,
          ...(read.linked ? { link: this.links.linkOf(channel) } : {}),
        },
      )
      .catch((err: unknown) => {
        if (err instanceof ChannelChanged) return; // deleted or rotated: the next listing decides
        // Only the message: an IMAP or network error names the server, never the password.
        log.warn(
          { error: err instanceof Error ? err.message : String(err) },
          'reading a polled channel failed; it starts again',
        );
      })
      .finally(() => {
        if (this.readings.get(channel.id)?.abort === abort) this.readings.delete(channel.id);
      });
    this.readings.set(channel.id, { businessId: channel.business_id, configKey, abort, done });
  }

  /** Stops reading a channel and, unless another process holds it already, gives its lease back. */
  private async end(channelId: string, release = true): Promise<void> {
    const reading = this.readings.get(channelId);
    if (!reading) return;
    reading.abort.abort();
    await reading.done;
    this.readings.delete(channelId);
    if (release)
      await inboundCursorsRepository.release(this.db, { business_id: reading.businessId, id: channelId }, this.holder);
  }
}

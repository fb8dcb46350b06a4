import { setTimeout as sleep } from 'node:timers/promises';

/** The two export collections the sync copies. */
export type ExportKind = 'messages' | 'events';

/** What every exported record has. */
export interface ExportRecord {
  id: string;
  created_at: string;
  [field: string]: unknown;
}

export interface ClientOptions {
  /** Base address of the service, with or without the /external/v2 path. */
  url: string;
  key: string;
  pageSize?: number;
  /** Replaceable for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Called on every wait, so the caller can show it. */
  onWait?: (kind: ExportKind, ms: number, why: 'pace' | 'retry_after' | 'error') => void;
}

/** `RateLimit: "exports";r=37;t=23` -> remaining and seconds to reset. */
export function parseRateLimit(header: string | null): { remaining: number; resetSeconds: number } | undefined {
  const m = header ? /;\s*r=(\d+)\s*;\s*t=(\d+)/.exec(header) : null;
  return m ? { remaining: Number(m[1]), resetSeconds: Number(m[2]) } : undefined;
}

/**
 * Reads export pages as the contract asks: cursor paging, a request spaced from the previous one by
 * the time left in the window divided by the requests left in it (so a walk uses the whole limit
 * without meeting 429), `Retry-After` honoured if a 429 comes anyway, transient failures retried.
 */
export class ExportClient {
  private readonly base: string;
  private readonly nextAt: Record<ExportKind, number> = { messages: 0, events: 0 };

  constructor(private readonly options: ClientOptions) {
    const trimmed = options.url.replace(/\/+$/, '');
    this.base = trimmed.endsWith('/external/v2') ? trimmed : `${trimmed}/external/v2`;
  }

  /** Every record of one window, page by page. */
  async *pages(kind: ExportKind, since: string, until: string): AsyncGenerator<ExportRecord[]> {
    let cursor: string | null = null;
    do {
      const query = new URLSearchParams({ since, until, limit: String(this.options.pageSize ?? 500) });
      if (cursor) query.set('cursor', cursor);
      const body = (await this.get(kind, `${this.base}/${kind}?${query.toString()}`)) as Record<string, unknown>;
      yield body[kind] as ExportRecord[];
      cursor = body.next_cursor as string | null;
    } while (cursor);
  }

  private async get(kind: ExportKind, url: string): Promise<unknown> {
    const fetcher = this.options.fetch ?? fetch;
    for (let attempt = 1; ; attempt++) {
      await this.wait(kind, this.nextAt[kind] - Date.now(), 'pace');
      const started = Date.now();
      let res: Response;
      try {
        res = await fetcher(url, { headers: { 'x-api-key': this.options.key, accept: 'application/json' } });
      } catch (err) {
        if (attempt >= 6) throw err;
        await this.wait(kind, 500 * 2 ** attempt, 'error');
        continue;
      }
      const limit = parseRateLimit(res.headers.get('ratelimit'));
      if (limit)
        this.nextAt[kind] =
          started + (limit.remaining === 0 ? limit.resetSeconds * 1000 : (limit.resetSeconds * 1000) / limit.remaining);
      if (res.status === 429) {
        await res.body?.cancel();
        const retryAfter = Number(res.headers.get('retry-after') ?? '1');
        this.nextAt[kind] = Date.now() + Math.max(1, retryAfter) * 1000;
        continue;
      }
      if (res.status >= 500 && attempt < 6) {
        await res.body?.cancel();
        await this.wait(kind, 500 * 2 ** attempt, 'error');
        continue;
      }
      const body: unknown = await res.json();
      if (!res.ok) throw new Error(`GET ${url.replace(this.base, '')} answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    }
  }

  private async wait(kind: ExportKind, ms: number, why: 'pace' | 'retry_after' | 'error'): Promise<void> {
    if (ms <= 0) return;
    this.options.onWait?.(kind, ms, why);
    await sleep(ms);
  }
}

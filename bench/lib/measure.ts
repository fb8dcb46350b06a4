import { readdirSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { Pool, type Dispatcher } from 'undici';

/** Resident memory of a process, sampled from /proc/<pid>/status every `everyMs`. */
export class RssSampler {
  peakMb = 0;
  readonly samples: { atMs: number; mb: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly started = Date.now();

  constructor(
    private readonly pid: number,
    private readonly everyMs = 200,
  ) {}

  /** Current VmRSS in MB, or undefined when the process is gone. */
  read(): number | undefined {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      return match ? Number(match[1]) / 1024 : undefined;
    } catch {
      return undefined;
    }
  }

  start(): this {
    const sample = () => {
      const mb = this.read();
      if (mb === undefined) return;
      this.samples.push({ atMs: Date.now() - this.started, mb });
      if (mb > this.peakMb) this.peakMb = mb;
    };
    sample();
    this.timer = setInterval(sample, this.everyMs);
    return this;
  }

  stop(): this {
    clearInterval(this.timer);
    return this;
  }
}

/** What one autocannon run gives: throughput, latency percentiles, and anything that went wrong. */
export interface LoadResult {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

export interface LoadOptions {
  url: string;
  /** Returns the path (with query) of each request. */
  path: () => string;
  headers?: Record<string, string>;
  connections?: number;
  durationSec: number;
  /** Fixed total rate (requests/s over all connections); unset = as fast as possible. */
  overallRate?: number;
}

/** One autocannon run whose every request asks for a new path (a random existing phone). */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections ?? 10,
    duration: options.durationSec,
    overallRate: options.overallRate,
    headers: options.headers,
    timeout: 10,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: options.path() }) }],
  });
  return {
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/** Latency of `count` requests sent one at a time, measured with a sub-millisecond clock. */
export interface SequentialResult {
  medianMs: number;
  p90Ms: number;
  p99Ms: number;
  count: number;
  failures: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

/**
 * Requests one after the other on one keep-alive connection: a single request's cost, without
 * queueing, which is what size independence is about (autocannon's histogram rounds to whole ms).
 * Returns each request's time in ms.
 */
export async function sequentialTimes(
  url: string,
  path: () => string,
  headers: Record<string, string>,
  count: number,
  maxMs: number,
): Promise<{ times: number[]; failures: number }> {
  const pool = new Pool(url, { connections: 1 });
  const times: number[] = [];
  let failures = 0;
  const deadline = Date.now() + maxMs;
  try {
    for (let i = 0; i < count && Date.now() < deadline; i++) {
      const started = performance.now();
      const res = await pool.request({ method: 'GET', path: path(), headers });
      await res.body.dump();
      times.push(performance.now() - started);
      if (res.statusCode !== 200) failures++;
    }
  } finally {
    await pool.close();
  }
  return { times, failures };
}

/** Median, p90 and p99 of request times. */
export function summarize(times: number[], failures: number): SequentialResult {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    medianMs: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    count: sorted.length,
    failures,
  };
}

export async function sequential(
  url: string,
  path: () => string,
  headers: Record<string, string>,
  count: number,
  maxMs: number,
): Promise<SequentialResult> {
  const { times, failures } = await sequentialTimes(url, path, headers, count, maxMs);
  return summarize(times, failures);
}

const TICKS_PER_SEC = 100;

function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return 0;
  }
}

/**
 * The scheduler's account of a process's main thread (`/proc/<pid>/schedstat`): nanoseconds on a
 * core, and nanoseconds runnable but waiting for one. The second is what a CPU meter cannot see:
 * on a machine with fewer cores than busy processes, a process woken by a socket waits there.
 */
export function schedulerNs(pid: number): { onCpu: number; waiting: number } {
  try {
    const [onCpu = 0, waiting = 0] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { onCpu, waiting };
  } catch {
    return { onCpu: 0, waiting: 0 };
  }
}

/** pids of the PostgreSQL backends serving `database` (their title is "postgres: 15/main: user db host ..."). */
export function postgresBackends(database: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (/^postgres: [^:]*: postgres \S+ /.test(cmdline) && cmdline.includes(` postgres ${database} `))
        out.push(Number(entry));
    } catch {
      // gone
    }
  }
  return out;
}

/**
 * CPU seconds used by a set of processes between start() and stop(): the cost of the work itself,
 * which other load on the machine changes much less than it changes wall-clock throughput.
 */
export class CpuMeter {
  private startTicks = new Map<number, number>();
  /** The last reading of each process, so one that exits before the end still counts until then. */
  private lastTicks = new Map<number, number>();
  private timer?: NodeJS.Timeout;
  constructor(private readonly pids: () => number[]) {}

  start(): this {
    this.startTicks = new Map(this.pids().map((p) => [p, cpuTicks(p)]));
    this.lastTicks = new Map(this.startTicks);
    this.timer = setInterval(() => this.read(), 500).unref();
    return this;
  }

  private read(): void {
    for (const p of new Set([...this.lastTicks.keys(), ...this.pids()])) {
      const ticks = cpuTicks(p);
      if (ticks > 0) this.lastTicks.set(p, ticks);
    }
  }

  /**
   * CPU seconds since start (processes that started since count from zero). The periodic readings
   * stop here; asked again, it reads the processes once more (an exit after the first answer loses
   * only what that process used since).
   */
  seconds(): number {
    clearInterval(this.timer);
    this.read();
    let ticks = 0;
    for (const [p, last] of this.lastTicks) ticks += last - (this.startTicks.get(p) ?? 0);
    return ticks / TICKS_PER_SEC;
  }
}

/** One call of an open-loop run: when it was due (ms from the start), its latency from then, and its answer. */
export interface OpenLoopCall {
  due: number;
  ms: number;
  method: string;
  status: number;
}

/**
 * Fires `next()` every 1/rate s on `pool`, whether or not earlier calls have answered (open loop), until
 * `until` settles; each call's latency counts from its due time, so a stalled service shows as the wait it
 * caused. Answers of 300 and above and network errors are `failures`.
 */
export async function openLoop(
  pool: Pool,
  rate: number,
  next: () => Dispatcher.RequestOptions,
  until: Promise<unknown>,
): Promise<{ calls: OpenLoopCall[]; failures: string[] }> {
  const calls: OpenLoopCall[] = [];
  const failures: string[] = [];
  const inFlight = new Set<Promise<void>>();
  let done = false;
  // Ends the calls however `until` ends; its failure is the caller's to await.
  until.then(
    () => (done = true),
    () => (done = true),
  );
  const start = performance.now();
  for (let i = 0; !done; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const call = next();
    const run = pool
      .request({ ...call, headersTimeout: 60_000, bodyTimeout: 60_000 })
      .then(async (res) => {
        const text = await res.body.text();
        const ms = performance.now() - due;
        calls.push({ due: Math.round(due - start), ms, method: call.method, status: res.statusCode });
        if (res.statusCode >= 300) failures.push(`${res.statusCode} ${text.slice(0, 200)}`);
      })
      .catch((err: unknown) => void failures.push((err as Error).message))
      .finally(() => inFlight.delete(run));
    inFlight.add(run);
  }
  await Promise.all([...inFlight]);
  return { calls, failures };
}

import { Pool } from 'undici';

/** One request of an open-loop run: what to send; `id` names it in the outcome. */
export interface PlannedRequest {
  id: string;
  method: 'POST' | 'GET' | 'PATCH';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** What happened to each request of an open-loop run, and the latencies. */
export interface OpenLoopResult {
  planned: number;
  sent: number;
  /** ids of the requests answered 2xx. */
  accepted: string[];
  /** ids answered non-2xx, with their status, and ids that failed (network, timeout). */
  rejected: { id: string; status: number; body: string }[];
  failed: { id: string; error: string }[];
  wallSec: number;
  /** 2xx answers per second of wall time (first scheduled send to last answer). */
  acceptedPerSec: number;
  /** Latency from the moment a request was due (open loop: client lag and queueing count). */
  fromDue: Percentiles;
  /** Latency from the moment undici was handed the request. */
  fromSend: Percentiles;
  /** Largest lag of the client behind the schedule (ms): when large, the client was starved of CPU. */
  maxClientLagMs: number;
  /** Latency from due per second of the schedule (request i in second floor(i / rate)), to see when a tail happens. */
  perSecond: Percentiles[];
}

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
  return { p50: at(50), p90: at(90), p99: at(99), max: sorted[sorted.length - 1] ?? NaN };
}

/**
 * Sends `requests` at a fixed rate whatever the answers do (open loop, like Meta's webhook
 * delivery): request i is due at start + i / rate. Latency is measured from the due time, so a
 * server that falls behind shows it (no coordinated omission).
 */
export async function openLoop(
  url: string,
  requests: PlannedRequest[],
  ratePerSec: number,
  options: {
    connections?: number;
    timeoutMs?: number;
    /** Connections to reuse (a warm-up's), left open. */ pool?: Pool;
  } = {},
): Promise<OpenLoopResult> {
  const pool =
    options.pool ?? new Pool(url, { connections: options.connections ?? 128, pipelining: 1, keepAliveTimeout: 30_000 });
  const timeoutMs = options.timeoutMs ?? 10_000;
  const fromDue: number[] = [];
  const fromSend: number[] = [];
  const bySecond: number[][] = [];
  const accepted: string[] = [];
  const rejected: OpenLoopResult['rejected'] = [];
  const failed: OpenLoopResult['failed'] = [];
  const inFlight = new Set<Promise<void>>();
  let maxLag = 0;
  let lastAnswer = 0;

  const fire = (req: PlannedRequest, due: number, second: number) => {
    const sentAt = performance.now();
    const run = pool
      .request({
        method: req.method,
        path: req.path,
        headers: req.headers,
        body: req.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
      .then(async (res) => {
        const text = await res.body.text();
        const now = performance.now();
        lastAnswer = now;
        fromDue.push(now - due);
        (bySecond[second] ??= []).push(now - due);
        fromSend.push(now - sentAt);
        if (res.statusCode >= 200 && res.statusCode < 300) accepted.push(req.id);
        else rejected.push({ id: req.id, status: res.statusCode, body: text.slice(0, 300) });
      })
      .catch((err: unknown) => void failed.push({ id: req.id, error: (err as Error).message }))
      .finally(() => inFlight.delete(run));
    inFlight.add(run);
  };

  const start = performance.now() + 20;
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (next < requests.length) {
        const due = start + (next * 1000) / ratePerSec;
        if (due > now) break;
        maxLag = Math.max(maxLag, now - due);
        fire(requests[next], due, Math.floor(next / ratePerSec));
        next++;
      }
      if (next >= requests.length) return resolve();
      const wait = start + (next * 1000) / ratePerSec - performance.now();
      // A timer, never a setImmediate loop: spinning would take a core from the service under test.
      // Requests are still timed from their due time, so a late timer shows in the latencies.
      setTimeout(tick, Math.max(1, Math.floor(wait)));
    };
    tick();
  });
  await Promise.all([...inFlight]);
  if (!options.pool) await pool.close();
  const wallSec = (lastAnswer - start) / 1000;
  return {
    planned: requests.length,
    sent: next,
    accepted,
    rejected,
    failed,
    wallSec,
    acceptedPerSec: accepted.length / wallSec,
    fromDue: percentiles(fromDue),
    fromSend: percentiles(fromSend),
    maxClientLagMs: maxLag,
    perSecond: Array.from(bySecond, (values) => percentiles(values ?? [])),
  };
}

/** Arrivals per fixed 1-s window (from the first arrival), and the most in any sliding 1-s window. */
export function arrivalWindows(timesMs: number[]): { perSecond: number[]; maxFixed: number; maxSliding: number } {
  if (timesMs.length === 0) return { perSecond: [], maxFixed: 0, maxSliding: 0 };
  const sorted = [...timesMs].sort((a, b) => a - b);
  const first = sorted[0];
  const perSecond: number[] = [];
  for (const t of sorted) {
    const w = Math.floor((t - first) / 1000);
    perSecond[w] = (perSecond[w] ?? 0) + 1;
  }
  let maxSliding = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi] - sorted[lo] >= 1000) lo++;
    maxSliding = Math.max(maxSliding, hi - lo + 1);
  }
  const filled = Array.from(perSecond, (n) => n ?? 0);
  return { perSecond: filled, maxFixed: Math.max(...filled), maxSliding };
}

import type { ImportResult } from '../import.bench.ts';
import type { LookupResult } from '../lookup.bench.ts';
import type { MedianResult } from '../scaling.bench.ts';

const n = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mark = (ok: boolean) => (ok ? 'met' : '**missed**');

/** Targets of issue 2, by engine. */
export const TARGETS = {
  importRate: { postgres: 20_000, pglite: 5_000 },
  importRssMb: 300,
  lookupRatio: 0.3,
  fixedRateP99Ms: 25,
  sizeRatio: 1.5,
} as const;

export function importTable(rows: { engine: string; label: string; result: ImportResult }[]): string {
  const lines = [
    '| engine | data set | records | seconds | records/s | target | server RSS start → peak (MB) | RSS at each 10% (MB) | CPU µs/record server + PG (client) | load avg | errors |',
    '|---|---|---:|---:|---:|---|---:|---|---|---:|---:|',
  ];
  for (const { engine, label, result: r } of rows) {
    const target = TARGETS.importRate[engine as 'postgres' | 'pglite'];
    const rateOk = r.recordsPerSec >= target;
    const memOk = r.peakRssMb < TARGETS.importRssMb;
    lines.push(
      `| ${engine} | ${label} | ${n(r.records)} | ${n(r.seconds, 1)} | ${n(r.recordsPerSec)} | ≥ ${n(target)}/s ${mark(rateOk)}; < 300 MB ${mark(memOk)} | ${n(r.startRssMb)} → ${n(r.peakRssMb)} | ${r.rssByTenth.join(', ')} | ${n(r.serverCpuUsPerRecord)} + ${n(r.postgresCpuUsPerRecord)} (${n(r.clientCpuUsPerRecord)}) | ${n(r.loadAverage, 1)} | ${r.errorCount} |`,
    );
  }
  return lines.join('\n');
}

export function lookupTable(engine: string, rows: LookupResult[]): string {
  const lines = [
    '| engine | route | connections | body bytes | service req/s | p50 / p99 ms | bare req/s | p50 / p99 ms | ratio | ≥ 0.30 | floor req/s (ratio) | CPU ms/req service + PG / bare / floor + PG | non-2xx / errors |',
    '|---|---|---:|---:|---:|---|---:|---|---:|---|---|---|---|',
  ];
  for (const r of rows) {
    const floor = r.floor && r.floorRatio !== undefined ? `${n(r.floor.requestsPerSec)} (${n(r.floorRatio, 2)})` : '–';
    const floorCpu = r.cpu.floorMs ? ` / ${n(r.cpu.floorMs.processMs, 2)} + ${n(r.cpu.floorMs.postgresMs, 2)}` : '';
    lines.push(
      `| ${engine} | ${r.route} | ${r.connections} | ${r.bodyBytes} | ${n(r.service.requestsPerSec)} | ${r.service.p50Ms} / ${r.service.p99Ms} | ${n(r.bare.requestsPerSec)} | ${r.bare.p50Ms} / ${r.bare.p99Ms} | ${n(r.ratio, 2)} | ${mark(r.ratio >= TARGETS.lookupRatio)} | ${floor} | ${n(r.cpu.serviceMs, 2)} + ${n(r.cpu.postgresMs, 2)} / ${n(r.cpu.bareMs, 2)}${floorCpu} | ${r.service.non2xx} / ${r.service.errors + r.service.timeouts} |`,
    );
  }
  return lines.join('\n');
}

export function fixedRateTable(engine: string, rows: LookupResult[]): string {
  const lines = [
    '| engine | route | rate (evenly spaced) | requests | p50 ms | p99 ms | max ms | p99 < 25 ms | non-2xx / errors |',
    '|---|---|---:|---:|---:|---:|---:|---|---|',
  ];
  for (const r of rows) {
    if (!r.fixedRate) continue;
    const f = r.fixedRate;
    lines.push(
      `| ${engine} | ${r.route} | ${n(f.requestsPerSec)}/s | ${f.requests} | ${f.p50Ms} | ${f.p99Ms} | ${f.maxMs} | ${mark(f.p99Ms < TARGETS.fixedRateP99Ms)} | ${f.non2xx} / ${f.errors + f.timeouts} |`,
    );
  }
  return lines.join('\n');
}

export function scalingTable(engine: string, small: MedianResult[], large: MedianResult[]): string {
  const lines = [
    '| engine | route | contacts small → large | median ms small | median ms large | ratio | ≤ 1.5 | p90 ms small / large | p99 ms small / large |',
    '|---|---|---|---:|---:|---:|---|---|---|',
  ];
  for (const s of small) {
    const l = large.find((x) => x.route === s.route);
    if (!l) continue;
    const ratio = l.latency.medianMs / s.latency.medianMs;
    lines.push(
      `| ${engine} | ${s.route} | ${n(s.contacts)} → ${n(l.contacts)} | ${n(s.latency.medianMs, 2)} | ${n(l.latency.medianMs, 2)} | ${n(ratio, 2)} | ${mark(ratio <= TARGETS.sizeRatio)} | ${n(s.latency.p90Ms, 2)} / ${n(l.latency.p90Ms, 2)} | ${n(s.latency.p99Ms, 2)} / ${n(l.latency.p99Ms, 2)} |`,
    );
  }
  return lines.join('\n');
}

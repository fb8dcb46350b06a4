/**
 * Import benchmark: streams a generated NDJSON data set straight into
 * POST /admin/v1/businesses/:bid/import (never building the file) and measures records/s and the
 * server process's resident memory, sampled every 200 ms, through the whole load.
 */
import { loadavg } from 'node:os';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { ndjsonChunks, recordCount, type DataSetShape } from './lib/generate.ts';
import { CpuMeter, postgresBackends, RssSampler } from './lib/measure.ts';
import { ADMIN_TOKEN, type RunningProcess, type Tenant } from './lib/service.ts';

export interface ImportResult {
  /** Records and contacts sent: fewer than the data set has when the time bound stopped it. */
  records: number;
  contacts: number;
  stoppedByTimeBound: boolean;
  seconds: number;
  recordsPerSec: number;
  peakRssMb: number;
  startRssMb: number;
  /** Server RSS when each further tenth of the records had been sent: flat memory shows here. */
  rssByTenth: number[];
  imported: Record<string, number>;
  errorCount: number;
  firstErrors: unknown[];
  /** CPU microseconds per record of the server process and of the PostgreSQL backends. */
  serverCpuUsPerRecord: number;
  postgresCpuUsPerRecord: number;
  /** CPU microseconds per record of this process (generating and sending the records): it shares the machine. */
  clientCpuUsPerRecord: number;
  /** Load average (1 min) of the machine at the end: other work there slows the figures. */
  loadAverage: number;
}

interface ImportAnswer {
  imported?: Record<string, number>;
  errors?: unknown[];
  error_count?: number;
}

/** Loads `shape` into the tenant through the import endpoint, in one streamed request. */
export async function runImport(
  service: RunningProcess,
  tenant: Tenant,
  shape: DataSetShape,
  label = '',
  database?: string,
  maxSeconds = 1800,
): Promise<ImportResult> {
  const total = recordCount(shape);
  let sentRecords = 0;
  let stoppedByTimeBound = false;
  const deadline = Date.now() + maxSeconds * 1000;
  const stop = () => (stoppedByTimeBound ||= Date.now() > deadline);
  const serverCpu = new CpuMeter(() => [service.pid]).start();
  const postgresCpu = new CpuMeter(() => (database ? postgresBackends(database) : [])).start();
  const clientCpu = new CpuMeter(() => [process.pid]).start();
  const sampler = new RssSampler(service.pid).start();
  const startRssMb = sampler.read() ?? 0;
  const rssByTenth: number[] = [];
  let nextTenth = 1;
  let lastLog = Date.now();
  const started = performance.now();
  const onRecords = (sent: number) => {
    sentRecords = sent;
    while (nextTenth <= 10 && sent >= (total * nextTenth) / 10) {
      rssByTenth.push(Math.round(sampler.read() ?? 0));
      nextTenth++;
    }
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      const elapsed = (performance.now() - started) / 1000;
      process.stderr.write(
        `  import${label}: ${sent}/${total} records sent, ${Math.round(sent / elapsed)}/s, server RSS ${Math.round(sampler.read() ?? 0)} MB\n`,
      );
    }
  };
  let answer: ImportAnswer;
  let status: number;
  try {
    const res = await request(`${service.url}/admin/v1/businesses/${tenant.businessId}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/x-ndjson' },
      body: Readable.from(ndjsonChunks(shape, onRecords, stop), { objectMode: false }),
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    status = res.statusCode;
    answer = (await res.body.json()) as ImportAnswer;
  } finally {
    sampler.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  if (status !== 200 && status !== 201)
    throw new Error(`import answered ${status}: ${JSON.stringify(answer).slice(0, 2000)}`);
  const errors = answer.errors ?? [];
  const perContact = recordCount({ ...shape, contacts: 1 });
  return {
    records: sentRecords,
    contacts: Math.floor(sentRecords / perContact),
    stoppedByTimeBound,
    seconds,
    recordsPerSec: sentRecords / seconds,
    peakRssMb: sampler.peakMb,
    startRssMb,
    rssByTenth,
    imported: answer.imported ?? {},
    errorCount: answer.error_count ?? errors.length,
    firstErrors: errors.slice(0, 5),
    serverCpuUsPerRecord: (serverCpu.seconds() * 1e6) / Math.max(1, sentRecords),
    postgresCpuUsPerRecord: (postgresCpu.seconds() * 1e6) / Math.max(1, sentRecords),
    clientCpuUsPerRecord: (clientCpu.seconds() * 1e6) / Math.max(1, sentRecords),
    loadAverage: loadavg()[0],
  };
}

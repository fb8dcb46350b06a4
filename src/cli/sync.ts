import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import cliProgress from 'cli-progress';
import type { ExportKind } from '../sync/export-client.ts';
import { ndjsonSink, postgresSink } from '../sync/sinks.ts';
import { RESUME_OVERLAP_MINUTES, runSync } from '../sync/sync.ts';

const usage = `Copies a business's messages and events from the export API.

  npm run sync -- --url http://host:3000 --key mk_live_... --since 2026-08-01 (--out ./dir | --database postgres://...)

  --url        address of the service (with or without /external/v2)
  --key        the business's API key (or SYNC_API_KEY)
  --since      where to start when nothing is stored yet (ISO 8601 or a date)
  --until      where to stop (default now)
  --out        directory for messages.ndjson and events.ndjson (relative to where the command was typed)
  --database   PostgreSQL database for tables sync_messages and sync_events
  --only       messages or events (default both)
  --overlap    minutes a resume goes back before the last stored record (default ${RESUME_OVERLAP_MINUTES})
  --quiet      no progress bar

A second run resumes from the last stored created_at minus the overlap and skips ids already held.
Messages recorded later than the overlap after they happened (a provider redelivering after an
outage) are caught by a run with a wider --overlap, e.g. 10080 (7 days).`;

/** Parses the command line; throws with the usage text on a mistake. */
export function parseSyncArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      out: { type: 'string' },
      database: { type: 'string' },
      only: { type: 'string' },
      overlap: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) throw new Error(usage);
  const key = values.key ?? process.env.SYNC_API_KEY;
  if (!values.url || !key || !values.since || !values.out === !values.database) throw new Error(usage);
  if (values.only !== undefined && values.only !== 'messages' && values.only !== 'events') throw new Error(usage);
  const overlapMinutes = values.overlap === undefined ? undefined : Number(values.overlap);
  if (
    overlapMinutes !== undefined &&
    !(Number.isInteger(overlapMinutes) && overlapMinutes >= 0 && overlapMinutes <= 525_600)
  )
    throw new Error(usage);
  const kinds: ExportKind[] | undefined =
    values.only === 'messages' || values.only === 'events' ? [values.only] : undefined;
  return {
    ...values,
    url: values.url,
    key,
    since: values.since,
    kinds,
    overlapMinutes,
  };
}

async function main(): Promise<void> {
  const args = parseSyncArgs(process.argv.slice(2));
  // `npm run` runs the tool in the package's folder; INIT_CWD is where the command was typed, which is
  // what a relative --out means to whoever typed it.
  const sink = args.out
    ? ndjsonSink(resolve(process.env.INIT_CWD ?? '.', args.out))
    : await postgresSink(args.database!);
  const bars = new cliProgress.MultiBar(
    { hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  const bar: Partial<Record<ExportKind, cliProgress.SingleBar>> = {};
  // The kind is written into its bar's format, and the total set apart: where the output is no
  // terminal (a log, a pipe) cli-progress never starts a bar, so what create() is given is dropped,
  // and the line printed at the end would show a {kind} placeholder and a wrong percentage.
  const barOf = (kind: ExportKind, total: number) => {
    let line = bar[kind];
    if (!line) {
      line = bars.create(
        total,
        0,
        { records: 0, status: '' },
        {
          format: ` ${kind.padEnd(8)} |{bar}| {percentage}% | {records} stored | {status}`,
        },
      );
      line.setTotal(total);
      bar[kind] = line;
    }
    return line;
  };
  try {
    const results = await runSync({
      url: args.url,
      key: args.key,
      since: args.since,
      until: args.until,
      kinds: args.kinds,
      overlapMinutes: args.overlapMinutes,
      sink,
      onProgress: args.quiet
        ? undefined
        : ({ kind, done, total, records }) => barOf(kind, total).update(done, { records, status: '' }),
      onWait: args.quiet
        ? undefined
        : (kind, ms, why) =>
            bar[kind]?.update({ status: why === 'pace' ? '' : `waiting ${Math.ceil(ms / 1000)} s (${why})` }),
    });
    bars.stop();
    for (const r of results)
      console.log(`${r.kind}: ${r.stored} stored, ${r.skipped} already held, ${r.pages} pages, from ${r.from}`);
  } finally {
    bars.stop();
    await sink.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: Error) => {
    console.error(err.message);
    process.exitCode = 1;
  });
}

import pg from 'pg';
import { request } from 'undici';
import { load } from './lib/measure.ts';
import { openLoop } from './lib/messaging-load.ts';
import { randomQueryPhone, rng } from './lib/generate.ts';
import { ADMIN_TOKEN, startService } from './lib/service.ts';
const url = 'postgres://postgres@127.0.0.1:5432/bench_speed';
const c = new pg.Client({ connectionString: url }); await c.connect();
const bid = (await c.query('select id from businesses limit 1')).rows[0].id; await c.end();
const svc = await startService({ engine: 'postgres', env: { DATABASE_URL: url, SECRET_KEY: process.env.SK ?? '' }, dispose: async () => {} } as never, 4999, JSON.parse(process.env.EXTRA ?? '{}'));
try {
const res = await request(`${svc.url}/admin/v1/businesses/${bid}/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'p99' }) });
const { key } = (await res.body.json()) as { key: string };
const random = rng(7);
for (const route of ['contacts', 'conversations']) {
  const path = () => `/external/v2/${route}?phone=${randomQueryPhone(100000, random)}`;
  await load({ url: svc.url, path, headers: { 'x-api-key': key }, durationSec: 5 });
  for (let i = 0; i < Number(process.env.N ?? 2); i++) {
    const reqs = Array.from({ length: 4000 }, (_, j) => ({ id: String(j), method: 'GET' as const, path: path(), headers: { 'x-api-key': key } }));
    const r = await openLoop(svc.url, reqs as never, 200, { connections: 10 });
    console.log(route, r.accepted.length, JSON.stringify(r.fromDue), JSON.stringify(r.fromSend), r.maxClientLagMs);
  }
}
} finally { await svc.stop(); }

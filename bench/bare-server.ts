/**
 * The baseline of the lookup benchmark: a bare Fastify process that answers the service's lookup
 * paths with the bytes the service answered (body and extra headers captured from it), with no auth,
 * validation or database. Run by bench/lib/bare.ts with PORT and BARE_RESPONSES (a JSON file).
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

interface CapturedResponse {
  path: string;
  contentType: string;
  headers: Record<string, string>;
  body: string;
}

const responses = JSON.parse(readFileSync(process.env.BARE_RESPONSES!, 'utf8')) as CapturedResponse[];
const app = Fastify({ logger: false });

app.get('/readyz', async () => ({ status: 'ready' }));
for (const captured of responses) {
  app.get(captured.path, async (_request, reply) => reply.headers(captured.headers).type(captured.contentType).send(captured.body));
}

const stop = () => void app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });

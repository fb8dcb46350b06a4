// Runs npm scripts at the same time (the type-check and the lint beside the tests): the first with
// its output as it comes, the others with their output held and printed once all have ended, so the
// first one's output stays readable. Exits with the first failure's status.
// Usage: tsx test/tools/parallel.ts <main script> [<script beside it>...] [<argument of the main script>...]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

interface Result {
  script: string;
  status: number;
  output: Buffer[];
  seconds: number;
}

function run(script: string, streamed: boolean, args: string[] = []): Promise<Result> {
  const started = Date.now();
  const child = spawn('npm', ['run', '--silent', script, ...(args.length ? ['--', ...args] : [])], {
    stdio: streamed ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    shell: process.platform === 'win32',
  });
  const output: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk));
  const seconds = () => Math.round((Date.now() - started) / 1000);
  return new Promise((resolve) => {
    child.on('error', (error) =>
      resolve({ script, status: 1, output: [Buffer.from(`${error.message}\n`)], seconds: 0 }),
    );
    child.on('close', (code, signal) =>
      resolve({ script, status: code ?? (signal ? 1 : 0), output, seconds: seconds() }),
    );
  });
}

const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
const [main, ...rest] = process.argv.slice(2);
if (!main) {
  console.error(
    'usage: tsx test/tools/parallel.ts <main script> [<script beside it>...] [<argument of the main script>...]',
  );
  process.exit(2);
}
// `npm test -- test/a.test.ts` appends its arguments: those that name no script go to the main one.
const beside = rest.filter((name) => Object.hasOwn(scripts, name));
const forwarded = rest.filter((name) => !Object.hasOwn(scripts, name));
const results = await Promise.all([run(main, true, forwarded), ...beside.map((script) => run(script, false))]);
for (const result of results.slice(1)) {
  process.stdout.write(`\n> ${result.script}\n`);
  process.stdout.write(Buffer.concat(result.output));
}
process.stdout.write('\n');
for (const { script, status, seconds } of results) {
  process.stdout.write(`${script}: ${status === 0 ? 'passed' : `failed (exit status ${status})`} in ${seconds} s\n`);
}
process.exit(results.find((result) => result.status !== 0)?.status ?? 0);

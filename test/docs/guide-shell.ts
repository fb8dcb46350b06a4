import { spawn } from 'node:child_process';
import { mkdir, open, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// Runs the shell blocks of a markdown guide one after the other, as a reader would paste them into one
// shell: what a block sets, variables and functions, is there for the next. Each block runs in a bash
// of its own that loads what the blocks before it left, so the test can check the service between
// blocks; every curl a block makes is recorded (its arguments, status and body) for the checks.

/** A fenced block tagged ```sh guide <name>``` (or ```sh guide start``` for the one that starts the service). */
export interface GuideBlock {
  name: string;
  code: string;
  /** 1-based line of the opening fence in the markdown. */
  line: number;
}

/** The guide's blocks, and the lines of shell blocks that are not tagged `guide` (so would not run). */
export function guideBlocks(markdown: string): { blocks: GuideBlock[]; untagged: number[] } {
  const blocks: GuideBlock[] = [];
  const untagged: number[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,})\s*(\S*)\s*(.*)$/.exec(lines[i]);
    if (!fence) continue;
    const [, ticks, language, info] = fence;
    const end = lines.findIndex((line, j) => j > i && line.startsWith(ticks) && line.trim() === ticks);
    if (end < 0) throw new Error(`line ${i + 1}: the fence is never closed`);
    const code = lines.slice(i + 1, end).join('\n') + '\n';
    const tag = /^guide\s+(\S+)$/.exec(info.trim());
    if (['sh', 'bash', 'shell'].includes(language)) {
      if (tag) blocks.push({ name: tag[1], code, line: i + 1 });
      else untagged.push(i + 1);
    }
    i = end;
  }
  return { blocks, untagged };
}

/** One curl a block ran. */
export interface Call {
  /** The arguments as written, after the shell expanded them. */
  args: string[];
  /** The method and URL, e.g. `POST http://localhost:3000/external/v2/contacts`, for messages. */
  request: string;
  /** 0 when no answer came (connection refused). */
  status: number;
  headers: string;
  body: string;
  /** The body parsed as JSON (throws with the body when it is not). */
  json(): any;
}

/** What running a block gave. */
export interface BlockRun {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  calls: Call[];
  /** The guide's variables after the block (unset ones absent). */
  vars: Record<string, string>;
}

/** Upper-case names a block assigns (`NAME=`, `export NAME=`): the state carried from block to block. */
export function assignedNames(code: string): string[] {
  return [...new Set([...code.matchAll(/(?:^|[\s;&|(])(?:export\s+)?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]))];
}

const prelude = (names: string[]) => `
set -euo pipefail
if [ -f "$GUIDE_DIR/state.sh" ]; then source "$GUIDE_DIR/state.sh"; fi
__guide_save() {
  { declare -p ${names.join(' ')} 2>/dev/null || true; declare -f; } > "$GUIDE_DIR/state.sh"
  for __name in ${names.join(' ')}; do
    if [ -n "\${!__name+set}" ]; then printf '%s=%s\\0' "$__name" "\${!__name}"; fi
  done > "$GUIDE_CALLS/vars"
}
trap __guide_save EXIT
# Every curl is recorded: its arguments, status, headers and body; the body still goes to stdout.
curl() {
  local n dir rc=0
  n=$(( $(cat "$GUIDE_CALLS/count" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$GUIDE_CALLS/count"
  dir="$GUIDE_CALLS/$n"
  mkdir "$dir"
  printf '%s\\0' "$@" > "$dir/args"
  command curl --output "$dir/body" --dump-header "$dir/headers" \\
    --write-out '%{http_code} %{method} %{url_effective}' "$@" > "$dir/status" || rc=$?
  if [ -f "$dir/body" ]; then cat "$dir/body"; fi
  return $rc
}
# The blocks run in a scratch folder as if it were the checkout, so what they write stays out of it.
npm() { command npm --prefix "$GUIDE_CHECKOUT" "$@"; }
`;

async function readCalls(dir: string): Promise<Call[]> {
  const entries = (await readdir(dir)).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(a) - Number(b));
  return Promise.all(
    entries.map(async (name) => {
      const read = (file: string) => readFile(join(dir, name, file), 'utf8').catch(() => '');
      const [args, status, headers, body] = await Promise.all([
        read('args'),
        read('status'),
        read('headers'),
        read('body'),
      ]);
      const [code = '0', method = '', url = ''] = status.split(' ');
      return {
        args: args.split('\0').slice(0, -1),
        request: `${method} ${url}`,
        status: Number(code),
        headers,
        body,
        json() {
          try {
            return JSON.parse(body);
          } catch {
            throw new Error(`${method} ${url} answered ${code} with a body that is not JSON: ${body.slice(0, 500)}`);
          }
        },
      };
    }),
  );
}

/** A shell session over a scratch folder; `env` is all the environment the blocks see. */
export class GuideShell {
  private runs = 0;
  /** Process groups of blocks that left something running in the background (the service). */
  readonly background: number[] = [];

  constructor(
    private readonly dir: string,
    private readonly env: Record<string, string>,
    /** Every name any block assigns, so each block saves the whole state. */
    private readonly names: string[],
  ) {}

  async run(block: GuideBlock, timeoutMs: number): Promise<BlockRun> {
    const index = ++this.runs;
    const calls = join(this.dir, '.guide', `calls-${index}`);
    await mkdir(calls, { recursive: true });
    const script = join(this.dir, '.guide', `block-${index}-${block.name}.sh`);
    await writeFile(script, `${prelude(this.names)}\nsource ${JSON.stringify(`${script}.body`)}\n`);
    await writeFile(`${script}.body`, block.code);
    const stdoutPath = join(calls, 'stdout');
    const stderrPath = join(calls, 'stderr');
    const [stdout, stderr] = await Promise.all([open(stdoutPath, 'w'), open(stderrPath, 'w')]);
    // Files, not pipes: a process a block leaves in the background keeps its output open.
    const child = spawn('bash', [script], {
      cwd: this.dir,
      env: { ...this.env, GUIDE_DIR: join(this.dir, '.guide'), GUIDE_CALLS: calls },
      stdio: ['ignore', stdout.fd, stderr.fd],
      detached: true,
    });
    const group = child.pid;
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        // The whole group: the block and anything it started.
        if (group) process.kill(-group, 'SIGKILL');
        resolve(null);
      }, timeoutMs);
      child.on('error', reject);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    await Promise.all([stdout.close(), stderr.close()]);
    // Its bash has exited: a group that still has members is what the block left running.
    if (group && exitCode !== null && groupAlive(group)) this.background.push(group);
    const vars = Object.fromEntries(
      (await readFile(join(calls, 'vars'), 'utf8').catch(() => ''))
        .split('\0')
        .slice(0, -1)
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    );
    return {
      exitCode,
      stdout: await readFile(stdoutPath, 'utf8'),
      stderr: await readFile(stderrPath, 'utf8'),
      calls: await readCalls(calls),
      vars,
    };
  }
}

function groupAlive(group: number): boolean {
  try {
    process.kill(-group, 0);
    return true;
  } catch {
    return false;
  }
}

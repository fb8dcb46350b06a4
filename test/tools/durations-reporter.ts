import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

interface FileTimes {
  project: string;
  file: string;
  /** Importing the file and what it imports (src, helpers), and running its describe blocks. */
  collect: number;
  /** Tests and hooks. */
  run: number;
  /** Tests alone; the rest of `run` is hooks (building apps and databases, closing them). */
  tests: number;
  tests_count: number;
}

/**
 * Where a run's time goes, file by file: import, hooks and tests (docs/TESTING.md). Prints the
 * slowest files and the totals; DURATIONS_FILE=path writes every file's figures as JSON.
 */
export default class DurationsReporter implements Reporter {
  private readonly files: FileTimes[] = [];
  private started = 0;

  onTestRunStart() {
    this.started = performance.now();
  }

  onTestModuleEnd(module: TestModule) {
    const diagnostic = module.diagnostic();
    let tests = 0;
    let count = 0;
    for (const test of module.children.allTests()) {
      tests += test.diagnostic()?.duration ?? 0;
      count += 1;
    }
    this.files.push({
      project: module.project.name,
      file: relative(process.cwd(), module.moduleId),
      collect: Math.round(diagnostic.collectDuration),
      run: Math.round(diagnostic.duration),
      tests: Math.round(tests),
      tests_count: count,
    });
  }

  onTestRunEnd() {
    const wall = Math.round(performance.now() - this.started);
    const sum = (key: 'collect' | 'run' | 'tests') => this.files.reduce((total, file) => total + file[key], 0);
    const slowest = [...this.files].sort((a, b) => b.collect + b.run - (a.collect + a.run)).slice(0, 25);
    const seconds = (ms: number) => (ms / 1000).toFixed(1).padStart(7);
    const lines = ['', '   file  import   hooks   tests  project  file'];
    for (const file of slowest) {
      const total = file.collect + file.run;
      const hooks = file.run - file.tests;
      lines.push(
        `${seconds(total)} ${seconds(file.collect)} ${seconds(hooks)} ${seconds(file.tests)}  ${file.project.padEnd(8)} ${file.file}`,
      );
    }
    lines.push(
      `files ${this.files.length}, wall ${seconds(wall)} s; summed: import ${seconds(sum('collect'))} s, ` +
        `hooks ${seconds(sum('run') - sum('tests'))} s, tests ${seconds(sum('tests'))} s`,
      '',
    );
    process.stdout.write(lines.join('\n'));
    if (process.env.DURATIONS_FILE) {
      writeFileSync(process.env.DURATIONS_FILE, JSON.stringify({ wall, files: this.files }, null, 2));
    }
  }
}

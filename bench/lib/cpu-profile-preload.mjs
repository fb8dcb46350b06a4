// Preloaded with NODE_OPTIONS=--import by bench/profile.ts (Node 20 refuses --cpu-prof there) into
// the process that runs dist/server.js: the first SIGUSR2 starts the CPU profiler, the second stops
// it and writes the profile to CPU_PROFILE_FILE.
import process from 'node:process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

if (process.argv.some((arg) => arg.endsWith('dist/server.js')) && process.env.CPU_PROFILE_FILE) {
  const session = new Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.enable', () => session.post('Profiler.start'));
      return;
    }
    running = false;
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(process.env.CPU_PROFILE_FILE, JSON.stringify(result.profile));
    });
  });
}

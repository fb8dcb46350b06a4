import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { ImapFlow } from 'imapflow';

/** A Dovecot IMAP server of one test file: plaintext login on loopback, users from a passwd file. */
export interface TestDovecot {
  host: string;
  port: number;
  /** Puts a mail into a user's INBOX (IMAP APPEND), as a sender's server would deliver it; its UID. */
  append(user: string, raw: string | Buffer): Promise<number>;
  close(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function listening(port: number, exited: () => boolean): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (exited()) throw new Error('dovecot exited at start');
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('dovecot did not listen');
}

/** The system user a service of Dovecot runs as: its own (created by the package) as root, else ours. */
function serviceUser(name: string): { user: string; uid: number; gid: number } {
  const me = userInfo();
  if (me.uid !== 0) return { user: me.username, uid: me.uid, gid: me.gid };
  const uid = Number(execFileSync('id', ['-u', name]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', name]).toString().trim());
  return { user: name, uid, gid };
}

/**
 * Starts an unprivileged Dovecot (Debian's dovecot-imapd; .ci/run installs it) from a temporary
 * config on a free loopback port: IMAP only, no TLS, plaintext login, each user's mail a Maildir
 * under the temporary folder. As root, its processes run as the package's own users (Dovecot's
 * login process refuses root).
 */
export async function startDovecot(users: { user: string; password: string }[]): Promise<TestDovecot> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dovecot-test-'));
  // Dovecot's auth and mail processes run as its own users, which read the passwd file and the mail under it.
  await chmod(dir, 0o755);
  const port = await freePort();
  const mail = serviceUser('dovecot');
  const login = serviceUser('dovenull');
  await Promise.all(['run', 'state', 'mail'].map((d) => mkdir(path.join(dir, d))));
  await chown(path.join(dir, 'mail'), mail.uid, mail.gid);
  await writeFile(path.join(dir, 'passwd'), users.map((u) => `${u.user}:{PLAIN}${u.password}\n`).join(''));
  const config = `base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_internal_user = ${mail.user}
default_internal_group = ${mail.user}
default_login_user = ${login.user}
first_valid_uid = 0
mail_location = maildir:${dir}/mail/%u
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  chroot =
}
service anvil {
  chroot =
}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
userdb {
  driver = static
  args = uid=${mail.uid} gid=${mail.gid} home=${dir}/mail/%u
}
`;
  await writeFile(path.join(dir, 'dovecot.conf'), config);
  const child: ChildProcess = spawn('dovecot', ['-F', '-c', path.join(dir, 'dovecot.conf')], { stdio: 'ignore' });
  let exited = false;
  const ended = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  await listening(port, () => exited);
  const password = new Map(users.map((u) => [u.user, u.password]));
  return {
    host: '127.0.0.1',
    port,
    async append(user, raw) {
      const client = new ImapFlow({
        host: '127.0.0.1',
        port,
        secure: false,
        auth: { user, pass: password.get(user)! },
        logger: false,
      });
      await client.connect();
      try {
        const appended = await client.append('INBOX', raw);
        if (!appended || appended.uid === undefined) throw new Error('append gave no uid');
        return appended.uid;
      } finally {
        await client.logout();
      }
    },
    async close() {
      if (!exited) child.kill('SIGTERM');
      await ended;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

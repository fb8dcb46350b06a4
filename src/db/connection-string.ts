import { userInfo } from 'node:os';

/**
 * A PostgreSQL URL without a user name connects as the operating system's user, as psql does:
 * node-postgres takes the user from $USER only, which service managers and containers often leave
 * unset ("no PostgreSQL user name specified"). $PGUSER, when set, still wins.
 */
export function withDefaultUser(connectionString: string): string {
  if (process.env.PGUSER || !/^postgres(ql)?:\/\//i.test(connectionString)) return connectionString;
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return connectionString;
  }
  if (url.username !== '' || url.hostname === '') return connectionString;
  url.username = encodeURIComponent(userInfo().username);
  return url.toString();
}

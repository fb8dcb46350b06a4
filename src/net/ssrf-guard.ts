import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';
import { isPublicAddress } from './ip-policy.ts';

/** A target refused because it is (or resolves to) a non-public address, or is not http(s). */
export class SsrfError extends Error {
  readonly code = 'ERR_SSRF_BLOCKED';
}

/** A target refused for its address alone (loopback, private, reserved): what TargetPolicy.allowPrivate permits. */
export class NonPublicAddressError extends SsrfError {}

/** A URL refused for the user name or password in it, whatever the policy. */
export class CredentialsInUrlError extends SsrfError {}

/**
 * Whether loopback/private targets are allowed, for webhook deliveries and provider calls alike
 * (ALLOW_PRIVATE_WEBHOOK_TARGETS, for development, tests and receivers on the same network).
 */
export interface TargetPolicy {
  allowPrivate: boolean;
}

const bare = (hostname: string) => (hostname.startsWith('[') ? hostname.slice(1, -1) : hostname);

/**
 * Parses an outbound URL and checks what can be judged without DNS: http(s) only, no credentials
 * in it, and unless private targets are allowed a literal address must be global unicast. WHATWG
 * URL parsing already turns 2130706433, 0x7f000001, 0177.0.0.1 and 127.1 into 127.0.0.1. A host
 * name passes; the connection to it is checked when made (guardedConnector).
 */
export function checkTargetLiteral(raw: string, policy: TargetPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SsrfError('not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SsrfError('only http and https URLs are allowed');
  if (url.username !== '' || url.password !== '')
    throw new CredentialsInUrlError('credentials in the URL are not allowed; use a custom header');
  if (url.hostname === '') throw new SsrfError('the URL has no host');
  if (policy.allowPrivate) return url;
  const host = bare(url.hostname);
  if (ipaddr.isValid(host) && !isPublicAddress(host))
    throw new NonPublicAddressError(`${host} is not a public address`);
  return url;
}

/**
 * checkTargetLiteral, and unless private targets are allowed every address the host name resolves
 * to must be global unicast too. DNS failures are thrown as they come (callers decide whether they
 * are final).
 */
export async function checkTargetUrl(raw: string, policy: TargetPolicy): Promise<URL> {
  const url = checkTargetLiteral(raw, policy);
  const host = bare(url.hostname);
  if (policy.allowPrivate || ipaddr.isValid(host)) return url;
  const addresses = await dns.promises.lookup(host, { all: true, verbatim: true });
  const refused = addresses.find((a) => !isPublicAddress(a.address));
  if (refused) throw new NonPublicAddressError(`${host} resolves to ${refused.address}, not a public address`);
  return url;
}

/**
 * The address to connect to for a host name a provider is reached at outside HTTP (SMTP, IMAP):
 * unless private targets are allowed, a literal address must be public, and so must every address
 * the name resolves to; the first one is answered, so the connection goes where the check looked.
 * With private targets allowed, the host as given.
 */
export async function resolveTargetHost(host: string, policy: TargetPolicy): Promise<string> {
  const bareHost = bare(host);
  if (policy.allowPrivate) return bareHost;
  if (ipaddr.isValid(bareHost)) {
    if (!isPublicAddress(bareHost)) throw new NonPublicAddressError(`${bareHost} is not a public address`);
    return bareHost;
  }
  const addresses = await dns.promises.lookup(bareHost, { all: true, verbatim: true });
  const refused = addresses.find((a) => !isPublicAddress(a.address));
  if (refused) throw new NonPublicAddressError(`${bareHost} resolves to ${refused.address}, not a public address`);
  const [first] = addresses;
  if (!first) throw Object.assign(new Error(`${bareHost} has no address`), { code: 'ENOTFOUND' });
  return first.address;
}

/** A name that does not resolve (now): the lookup's own failure, not a refusal. */
export function isDnsFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA';
}

/** dns.lookup that fails when any address of the name is not public: every new connection resolves again. */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused)
      return callback(
        new NonPublicAddressError(`${hostname} resolves to ${refused.address}, not a public address`),
        '',
        0,
      );
    if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
    const [first] = addresses;
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
    return callback(null, first.address, first.family);
  });
};

/**
 * The undici connector of outbound calls: resolves through guardedLookup, and after the socket is
 * open checks the address it is actually connected to, so neither a literal address that skips DNS
 * nor an answer that changes between check and connect (DNS rebinding) reaches a private host.
 */
export function guardedConnector(policy: TargetPolicy, connectTimeoutMs = 10_000): buildConnector.connector {
  if (policy.allowPrivate) return buildConnector({ timeout: connectTimeoutMs });
  const connect = buildConnector({ timeout: connectTimeoutMs, lookup: guardedLookup });
  return (options, callback) => {
    // A literal address skips the lookup: refused before any packet is sent to it.
    const host = bare(options.hostname);
    if (ipaddr.isValid(host) && !isPublicAddress(host))
      return callback(new NonPublicAddressError(`${host} is not a public address`), null);
    connect(options, (...args) => {
      const [err, socket] = args;
      if (err) return callback(err, null);
      const remote = socket.remoteAddress;
      if (remote === undefined || !isPublicAddress(remote)) {
        socket.destroy();
        return callback(new NonPublicAddressError(`connected address ${remote ?? 'unknown'} is not public`), null);
      }
      return callback(null, socket);
    });
  };
}

/** A keep-alive connection pool whose every connection went through guardedConnector. */
export function guardedAgent(policy: TargetPolicy, options: { connections?: number } = {}): Agent {
  return new Agent({
    connect: guardedConnector(policy),
    connections: options.connections ?? 256,
    keepAliveTimeout: 10_000,
    // The whole-call limit (15 s) is an AbortSignal of the caller; these only bound idle gaps.
    headersTimeout: 15_000,
    bodyTimeout: 15_000,
  });
}

import { NonPublicAddressError, type SsrfError } from './ssrf-guard.ts';

/**
 * Why a target (a webhook URL, a channel's provider URL) was refused. A refusal for the address alone
 * names the setting that permits it, so whoever points one at their own network sees the way out in
 * the answer or the log.
 */
export function targetRefusal(err: SsrfError): string {
  if (!(err instanceof NonPublicAddressError)) return err.message;
  return `${err.message} (a service started with ALLOW_PRIVATE_WEBHOOK_TARGETS=true accepts private and loopback addresses)`;
}

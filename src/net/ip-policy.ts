import ipaddr from 'ipaddr.js';

/** IPv6 ranges that carry an IPv4 address in their last 32 bits: judged by that address. */
const EMBEDS_IPV4 = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052']);

function ipv4IsPublic(address: ipaddr.IPv4): boolean {
  // Everything ipaddr.js names (private, loopback, link-local, CGNAT, multicast, broadcast, reserved
  // incl. documentation and benchmarking, as112, amt, ...) is refused; only plain 'unicast' passes.
  return address.range() === 'unicast';
}

function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 {
  const [a, b, c, d] = address.toByteArray().slice(12);
  return new ipaddr.IPv4([a, b, c, d]);
}

/**
 * Whether a webhook may connect to this IP address (text, IPv4 or IPv6, brackets allowed): only
 * global unicast addresses. IPv4-mapped, IPv4-compatible (::a.b.c.d), SIIT and NAT64 forms are
 * judged by the IPv4 address inside. Anything that does not parse as an address is refused.
 */
export function isPublicAddress(text: string): boolean {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  // Zone ids (fe80::1%eth0) only exist on link-local addresses.
  if (bare.includes('%')) return false;
  // isValidFourPartDecimal keeps "127.1" and "0x7f.1" (which parse() would accept) out of the IPv4 path:
  // such forms never come out of a resolver or a WHATWG URL, so meeting one is a reason to refuse.
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipv4IsPublic(ipaddr.IPv4.parse(bare));
  if (!ipaddr.IPv6.isValid(bare)) return false;
  const address = ipaddr.IPv6.parse(bare);
  const range = address.range();
  if (EMBEDS_IPV4.has(range)) return ipv4IsPublic(embeddedIpv4(address));
  // IPv4-compatible (::/96, deprecated) addresses other than :: and ::1.
  const parts = address.parts;
  if (range === 'unicast' && parts.slice(0, 6).every((p) => p === 0)) return ipv4IsPublic(embeddedIpv4(address));
  return range === 'unicast';
}

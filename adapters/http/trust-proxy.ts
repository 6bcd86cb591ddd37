import { ApiError, ERRORS } from '../../lib/index.ts';
import { CidrError, inNetworks, parseExactAddress, parseNetwork, type Cidr } from '../../lib/conventions/cidr.ts';
import { quote } from './body.ts';

/**
 * Who the caller is behind reverse proxies, as Express's `trust proxy` decides it (its proxy-addr
 * module): starting from the connection's address, each trusted hop hands over to the entry it
 * appended to X-Forwarded-For, right to left; the first address not trusted is the caller. Proxies
 * append on the right, so everything left of the last trusted hop is whatever the client sent and
 * is never believed.
 *
 * Unlike proxy-addr, an entry the walk reaches that is no plain IP address (a name, a port, a zone
 * id such as `10.0.0.1%lo`, an empty entry) is refused with a 400: passed on, it would either match
 * nothing or, read leniently, pass for an address it is not.
 */

/**
 * Which hops are trusted: a number of hops counted from Burrow (`1`: the connection is a proxy and
 * the rightmost entry is the caller), or addresses, CIDRs and the names `loopback`, `linklocal`
 * and `uniquelocal`, as a comma-separated string or a list. `true` is `loopback` (a proxy on the
 * same machine); `false`, `0` and undefined trust nothing (X-Forwarded-For is ignored).
 */
export type TrustProxySetting = boolean | number | string | readonly string[];

/** Whether the address at `hop` (0 is the connection's own) is a proxy whose entry to its left is believed. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/** Express's named ranges. */
const NAMED_NETWORKS: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/**
 * Compiles a setting into a trust function, or undefined when nothing is trusted. Throws an Error
 * naming the bad part for a setting that is none of the forms above.
 */
export function compileTrustProxy(setting: TrustProxySetting | undefined): ProxyTrust | undefined {
  if (setting === undefined || setting === false) return undefined;
  if (setting === true) return compileTrustProxy('loopback');
  if (typeof setting === 'number' || (typeof setting === 'string' && /^\s*\d+\s*$/.test(setting))) {
    const hops = Number(setting);
    if (!Number.isSafeInteger(hops) || hops < 0) throw new Error(`trust proxy: a hop count must be a whole number of at least 0 (got ${setting})`);
    return hops === 0 ? undefined : (_address, hop) => hop < hops;
  }
  const entries = typeof setting === 'string' ? setting.split(',') : setting;
  const networks: Cidr[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    const named = NAMED_NETWORKS[entry.toLowerCase()];
    if (named) {
      networks.push(...named.map((cidr) => parseNetwork(cidr)));
      continue;
    }
    try {
      networks.push(parseNetwork(entry));
    } catch (error) {
      const why = error instanceof CidrError && error.suggestion ? ` (did you mean ${error.suggestion}?)` : '';
      throw new Error(`trust proxy: ${JSON.stringify(entry)} is not a hop count, an IP address, a CIDR or one of ${Object.keys(NAMED_NETWORKS).join(', ')}${why}`);
    }
  }
  if (networks.length === 0) throw new Error('trust proxy: the list of trusted proxies is empty');
  return (address) => inNetworks(networks, address);
}

/**
 * The caller's address: the connection's address, or the X-Forwarded-For entry the trusted hops
 * lead to. Throws a 400 ApiError when that entry is no plain IP address.
 */
export function callerAddress(socketAddress: string | undefined, forwardedFor: string | undefined, trust: ProxyTrust): string | undefined {
  if (socketAddress === undefined || forwardedFor === undefined || forwardedFor.trim() === '') return socketAddress;
  const entries = forwardedFor.split(',');
  let address = socketAddress;
  for (let hop = 0; hop < entries.length && trust(address, hop); hop++) {
    const entry = entries[entries.length - 1 - hop]!.trim();
    const parsed = parseExactAddress(entry);
    if (parsed === undefined) {
      throw new ApiError(ERRORS.REQUEST_MALFORMED, `X-Forwarded-For: entry ${hop + 1} from the right, ${quote(entry)}, is not an IP address, so the caller's address is unknown`, { header: 'X-Forwarded-For' });
    }
    address = parsed;
  }
  return address;
}

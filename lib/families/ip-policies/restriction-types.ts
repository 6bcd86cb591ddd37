import { findByUnique } from '../../engine/indexes.ts';
import type { BaseRecord } from '../../engine/resource.ts';
import type { StoreReader } from '../../store.ts';

/**
 * What IP policies and IP restrictions both need to know of restrictions: their types and how to
 * find an account's restriction of one type (a unique index on `type`, kept by the engine).
 */

export const IP_RESTRICTION_KIND = 'ip_restriction';

/** Restriction types: one restriction of each at most per account. */
export const RESTRICTION_TYPES = ['dashboard', 'api', 'agent', 'endpoints'] as const;
export type RestrictionType = (typeof RESTRICTION_TYPES)[number];

export interface IpRestrictionRecord extends BaseRecord {
  readonly enforced: boolean;
  readonly type: RestrictionType;
  readonly ip_policy_ids: readonly string[];
}

/** The account's restriction of `type`, if any (O(1)). */
export function restrictionOfType(reader: StoreReader, account: string, type: RestrictionType): Promise<IpRestrictionRecord | undefined> {
  // Not async: every API request asks (the `api` restriction guard), and a layer of await is a turn.
  return findByUnique(reader, account, IP_RESTRICTION_KIND, 'type', type) as Promise<IpRestrictionRecord | undefined>;
}

import * as v from 'valibot';
import { addPair, membersOf, pairsOf, removePair, type PairIndex } from '../../engine/indexes.ts';
import { existingIds } from '../../engine/references.ts';
import type { OperationContext } from '../../engine/context.ts';
import type { StoreReader } from '../../store.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { description, metadata } from '../../conventions/fields.ts';
import { absoluteUri } from '../../conventions/refs.ts';
import { eventsOf } from './settings.ts';
import { defineResource, emitAudit, refTo, respond, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { eventDestinations } from './destinations.ts';
import { EVENTS_ERRORS } from './errors.ts';

/**
 * Event subscriptions (/event_subscriptions): a subscription sends the events of its source types
 * to its destinations. Source types must be in the catalogue (238) and unique within a
 * subscription (5127); destinations must exist (5103) and, while used here, cannot be deleted
 * (the engine's reverse-reference index, 5112).
 *
 * Sources live inside the subscription record (sources.ts serves them one by one). Next to the
 * records, the store keeps an index from event type to the subscriptions that have a source of
 * that type, so routing an event costs one lookup plus the matching subscriptions, not a scan of
 * the account's subscriptions.
 */

export interface EventSubscriptionRecord extends BaseRecord {
  readonly source_types: readonly string[];
  readonly destination_ids: readonly string[];
}

/** The body of a source: `{ type }` (the older `filter`/`fields` members are gone in API v2). */
export const SourceInput = v.strictObject({ type: v.string() });

const SubscriptionCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  sources: v.optional(v.array(SourceInput)),
  destination_ids: v.optional(v.array(v.string())),
});
const SubscriptionUpdate = SubscriptionCreate;

/** Refuses a type outside the catalogue (238). */
export function checkCatalogue(ctx: OperationContext, type: string, field: string): void {
  if (!eventsOf(ctx).eventTypes.has(type)) {
    throw new ApiError(EVENTS_ERRORS.EVENT_TYPE_INVALID, `${field}: ${JSON.stringify(type)} is not an event type Burrow emits; the catalogue is at GET /_burrow/event_types`, { type });
  }
}

/** Refuses types outside the catalogue (238) and repeated types (5127). */
function validSourceTypes(ctx: OperationContext, types: readonly string[]): string[] {
  const seen = new Set<string>();
  types.forEach((type, index) => {
    checkCatalogue(ctx, type, `sources[${index}].type`);
    if (seen.has(type)) throw new ApiError(EVENTS_ERRORS.EVENT_SOURCE_DUPLICATE, `sources[${index}].type: ${type} appears more than once; each source type must be unique within a subscription`, { type });
    seen.add(type);
  });
  return [...seen];
}

function existingDestinations(ctx: OperationContext, ids: readonly string[]): Promise<string[]> {
  return existingIds(ids, async (id) => {
    if (!(await ctx.tx.get(scopeOf(ctx, eventDestinations.kind), id))) {
      throw new ApiError(EVENTS_ERRORS.EVENT_DESTINATION_NOT_FOUND, `destination_ids[${ids.indexOf(id)}]: event destination '${id}' was not found`, { id });
    }
  });
}

/** `…/event_subscriptions/{id}/sources/{type}`. */
export function sourceUri(ctx: OperationContext, subscriptionId: string, type: string): string {
  return absoluteUri(ctx.baseUrl, `/event_subscriptions/${subscriptionId}/sources/${encodeURIComponent(type)}`);
}

/** Pair index (event type, subscription id): which subscriptions have a source of a type. */
const sourceIndex = (account: string): PairIndex => ({ account, kind: '_event_source' });

/** Moves `subscriptionId` in the type index from the `previous` to the `next` source types. */
async function indexSources(ctx: OperationContext, subscriptionId: string, previous: readonly string[], next: readonly string[]): Promise<void> {
  for (const type of previous) if (!next.includes(type)) await removePair(ctx.tx, sourceIndex(ctx.account), type, subscriptionId);
  for (const type of next) if (!previous.includes(type)) await addPair(ctx.tx, sourceIndex(ctx.account), type, subscriptionId);
}

/** Whether some subscription of `account` has a source of `type` (one index lookup). */
export async function subscribedTo(reader: StoreReader, account: string, type: string): Promise<boolean> {
  return (await membersOf(reader, sourceIndex(account), type, 1)).length > 0;
}

/** The subscriptions of the caller's account that have a source of `type`, oldest first. */
export async function subscriptionsWithSource(ctx: OperationContext, type: string): Promise<EventSubscriptionRecord[]> {
  const out: EventSubscriptionRecord[] = [];
  for (const { member } of await pairsOf(ctx.tx, sourceIndex(ctx.account), type)) {
    const record = await ctx.tx.get(scopeOf(ctx, eventSubscriptions.kind), member);
    if (record) out.push(record as unknown as EventSubscriptionRecord);
  }
  return out;
}

export const eventSubscriptions = defineResource<EventSubscriptionRecord, typeof SubscriptionCreate, typeof SubscriptionUpdate>({
  name: 'event_subscriptions',
  label: 'event subscription',
  prefix: 'esb',
  filterable: true,
  event: 'event_subscription',
  notFoundError: EVENTS_ERRORS.EVENT_SUBSCRIPTION_NOT_FOUND,
  createSchema: SubscriptionCreate,
  storedFields: { source_types: v.array(v.string()) },
  updateSchema: SubscriptionUpdate,
  references: (record) => record.destination_ids,
  async create(ctx, input, base) {
    const source_types = validSourceTypes(ctx, (input.sources ?? []).map((s) => s.type));
    const destination_ids = await existingDestinations(ctx, input.destination_ids ?? []);
    await indexSources(ctx, base.id, [], source_types);
    return { ...base, source_types, destination_ids };
  },
  async update(ctx, record, patch) {
    let next = record;
    if (patch.sources) {
      next = { ...next, source_types: validSourceTypes(ctx, patch.sources.map((s) => s.type)) };
      await indexSources(ctx, record.id, record.source_types, next.source_types);
    }
    if (patch.destination_ids) next = { ...next, destination_ids: await existingDestinations(ctx, patch.destination_ids) };
    return next;
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    sources: record.source_types.map((type) => ({ type, uri: sourceUri(ctx, record.id, type) })),
    destinations: record.destination_ids.map((id) => refTo(ctx, eventDestinations, id)),
  }),
  async beforeDelete(ctx, record) {
    await indexSources(ctx, record.id, record.source_types, []);
  },
});

/**
 * Saves a subscription whose source types changed through the sources endpoints: keeps the type
 * index in step and emits event_subscription_updated.v0, as a PATCH of the subscription would.
 */
export async function saveSourceTypes(ctx: OperationContext, record: EventSubscriptionRecord, sourceTypes: readonly string[]): Promise<EventSubscriptionRecord> {
  const next = { ...record, source_types: sourceTypes };
  await indexSources(ctx, record.id, record.source_types, sourceTypes);
  await ctx.tx.put(scopeOf(ctx, eventSubscriptions.kind), next);
  emitAudit(ctx, eventSubscriptions, 'updated', respond(ctx, eventSubscriptions, next));
  return next;
}

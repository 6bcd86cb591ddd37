import * as v from 'valibot';
import type { Operation, OperationContext } from '../../context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { description, metadata, parseInput } from '../../conventions/fields.ts';
import { absoluteUri } from '../../conventions/refs.ts';
import { defineResource, emitAudit, getRecord, refTo, respond, scopeOf, stripPathIds, type BaseRecord } from '../../resource.ts';
import { eventDestinations } from './destinations.ts';
import { EVENT_DESTINATION_KIND, EVENT_SUBSCRIPTION_KIND } from './kinds.ts';

/**
 * Event subscriptions (/event_subscriptions) and their sources
 * (/event_subscriptions/{id}/sources/{type}). A subscription sends the events of its source types
 * to its destinations. Source types must be in the catalogue and unique within a subscription.
 * Sources live inside the subscription record; their endpoints change it (and emit
 * event_subscription_updated.v0).
 */

export interface EventSubscriptionRecord extends BaseRecord {
  readonly source_types: readonly string[];
  readonly destination_ids: readonly string[];
}

const SourceInput = v.strictObject({ type: v.string() });

const SubscriptionCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  sources: v.optional(v.array(SourceInput)),
  destination_ids: v.optional(v.array(v.string())),
});
const SubscriptionUpdate = SubscriptionCreate;

/** Refuses a type outside the catalogue (238). */
function checkCatalogue(ctx: OperationContext, type: string, field: string): void {
  if (!ctx.services.eventTypes.has(type)) {
    throw new ApiError(ERRORS.EVENT_TYPE_INVALID, `${field}: ${JSON.stringify(type)} is not an event type Burrow emits; the catalogue is at GET /_burrow/event_types`);
  }
}

/** Refuses types outside the catalogue (238) and repeated types (5127). */
function validSourceTypes(ctx: OperationContext, types: readonly string[]): string[] {
  const seen = new Set<string>();
  types.forEach((type, index) => {
    checkCatalogue(ctx, type, `sources[${index}].type`);
    if (seen.has(type)) throw new ApiError(ERRORS.EVENT_SOURCE_DUPLICATE, `sources[${index}].type: ${type} appears more than once; each source type must be unique within a subscription`);
    seen.add(type);
  });
  return [...seen];
}

async function existingDestinations(ctx: OperationContext, ids: readonly string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  for (const [index, id] of unique.entries()) {
    if (!(await ctx.tx.get(scopeOf(ctx, EVENT_DESTINATION_KIND), id))) {
      throw new ApiError(ERRORS.EVENT_DESTINATION_NOT_FOUND, `destination_ids[${index}]: event destination '${id}' was not found`, { id });
    }
  }
  return unique;
}

const sourceUri = (ctx: OperationContext, subscriptionId: string, type: string) =>
  absoluteUri(ctx.baseUrl, `/event_subscriptions/${subscriptionId}/sources/${encodeURIComponent(type)}`);

export const eventSubscriptions = defineResource<EventSubscriptionRecord, v.InferOutput<typeof SubscriptionCreate>, v.InferOutput<typeof SubscriptionUpdate>>({
  name: 'event_subscriptions',
  label: 'event subscription',
  kind: EVENT_SUBSCRIPTION_KIND,
  prefix: 'esb',
  path: '/event_subscriptions',
  listKey: 'event_subscriptions',
  event: 'event_subscription',
  notFoundError: ERRORS.EVENT_SUBSCRIPTION_NOT_FOUND,
  createSchema: SubscriptionCreate,
  updateSchema: SubscriptionUpdate,
  references: (record) => record.destination_ids,
  async create(ctx, input, base) {
    return {
      ...base,
      source_types: validSourceTypes(ctx, (input.sources ?? []).map((s) => s.type)),
      destination_ids: await existingDestinations(ctx, input.destination_ids ?? []),
    };
  },
  async update(ctx, record, patch) {
    return {
      ...record,
      ...(patch.sources ? { source_types: validSourceTypes(ctx, patch.sources.map((s) => s.type)) } : {}),
      ...(patch.destination_ids ? { destination_ids: await existingDestinations(ctx, patch.destination_ids) } : {}),
    };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    sources: record.source_types.map((type) => ({ type, uri: sourceUri(ctx, record.id, type) })),
    destinations: record.destination_ids.map((id) => refTo(ctx, eventDestinations, id)),
  }),
});

/** Sources: one generic set of operations keyed by the source type. */
function sourceOperations(): Operation[] {
  const collection = '/event_subscriptions/:subscription_id/sources';
  const item = `${collection}/:type`;
  const common = { tag: 'event_sources' } as const;

  const subscription = (ctx: OperationContext, id: string) => getRecord(ctx, eventSubscriptions, id);
  const source = (ctx: OperationContext, record: EventSubscriptionRecord, type: string) => {
    if (!record.source_types.includes(type)) {
      throw new ApiError(ERRORS.EVENT_SOURCE_NOT_FOUND, `event subscription '${record.id}' has no source of type ${JSON.stringify(type)}`, { type });
    }
    return { type, uri: sourceUri(ctx, record.id, type) };
  };
  const save = async (ctx: OperationContext, next: EventSubscriptionRecord) => {
    await ctx.tx.put(scopeOf(ctx, EVENT_SUBSCRIPTION_KIND), next);
    emitAudit(ctx, eventSubscriptions, 'updated', respond(ctx, eventSubscriptions, next));
  };

  return [
    {
      ...common,
      id: 'event_sources.create',
      method: 'POST',
      path: collection,
      status: 201,
      mutates: true,
      body: SourceInput,
      summary: 'Add a source (an event type) to an event subscription',
      async run(ctx, input) {
        const { type } = parseInput(SourceInput, stripPathIds(input.body ?? {}, input.params));
        const record = await subscription(ctx, input.params.subscription_id!);
        checkCatalogue(ctx, type, 'type');
        if (record.source_types.includes(type)) {
          throw new ApiError(ERRORS.EVENT_SOURCE_DUPLICATE, `type: ${type} is already a source of event subscription '${record.id}'`, { type });
        }
        const next = { ...record, source_types: [...record.source_types, type] };
        await save(ctx, next);
        return source(ctx, next, type);
      },
    },
    {
      ...common,
      id: 'event_sources.list',
      method: 'GET',
      path: collection,
      status: 200,
      mutates: false,
      summary: "List an event subscription's sources",
      async run(ctx, input) {
        const record = await subscription(ctx, input.params.subscription_id!);
        return {
          sources: record.source_types.map((type) => source(ctx, record, type)),
          uri: absoluteUri(ctx.baseUrl, `/event_subscriptions/${record.id}/sources`),
        };
      },
    },
    {
      ...common,
      id: 'event_sources.get',
      method: 'GET',
      path: item,
      status: 200,
      mutates: false,
      summary: 'Get one source of an event subscription',
      async run(ctx, input) {
        return source(ctx, await subscription(ctx, input.params.subscription_id!), input.params.type!);
      },
    },
    {
      ...common,
      id: 'event_sources.update',
      method: 'PATCH',
      path: item,
      status: 200,
      mutates: false,
      body: v.strictObject({}),
      summary: 'Update a source (sources have no updatable fields; `{}` answers the source)',
      async run(ctx, input) {
        parseInput(v.strictObject({}), stripPathIds(input.body ?? {}, input.params));
        return source(ctx, await subscription(ctx, input.params.subscription_id!), input.params.type!);
      },
    },
    {
      ...common,
      id: 'event_sources.delete',
      method: 'DELETE',
      path: item,
      status: 204,
      mutates: true,
      summary: 'Remove a source from an event subscription',
      async run(ctx, input) {
        const record = await subscription(ctx, input.params.subscription_id!);
        source(ctx, record, input.params.type!);
        await save(ctx, { ...record, source_types: record.source_types.filter((t) => t !== input.params.type) });
        return undefined;
      },
    },
  ];
}

export const EVENT_SOURCE_OPERATIONS: readonly Operation[] = sourceOperations();

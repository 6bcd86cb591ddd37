import * as v from 'valibot';
import type { Operation, OperationContext } from '../../context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { parseInput } from '../../conventions/fields.ts';
import { absoluteUri } from '../../conventions/refs.ts';
import { getRecord, stripPathIds } from '../../resource.ts';
import { checkCatalogue, eventSubscriptions, saveSourceTypes, SourceInput, sourceUri, type EventSubscriptionRecord } from './subscriptions.ts';

/**
 * Event sources (/event_subscriptions/{subscription_id}/sources/{type}): the source types of one
 * subscription, served one by one and keyed by the type string itself. They are not records of
 * their own: each change rewrites the subscription (and emits event_subscription_updated.v0).
 * Sources have no updatable field, so PATCH accepts only `{}` and answers the source unchanged.
 */

const SourcePatch = v.strictObject({});

const collection = `${eventSubscriptions.path}/:subscription_id/sources`;
const item = `${collection}/:type`;
const common = { tag: 'event_sources' } as const;

const subscription = (ctx: OperationContext, input: { params: Readonly<Record<string, string>> }) => getRecord(ctx, eventSubscriptions, input.params.subscription_id!);

/** `{ type, uri }` of a source the subscription has, or the 404 5125. */
function sourceOf(ctx: OperationContext, record: EventSubscriptionRecord, type: string): { type: string; uri: string } {
  if (!record.source_types.includes(type)) {
    throw new ApiError(ERRORS.EVENT_SOURCE_NOT_FOUND, `event subscription '${record.id}' has no source of type ${JSON.stringify(type)}`, { type });
  }
  return { type, uri: sourceUri(ctx, record.id, type) };
}

/** The create, list, get, update and delete operations of sources. */
export const EVENT_SOURCE_OPERATIONS: readonly Operation[] = [
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
      const record = await subscription(ctx, input);
      checkCatalogue(ctx, type, 'type');
      if (record.source_types.includes(type)) {
        throw new ApiError(ERRORS.EVENT_SOURCE_DUPLICATE, `type: ${type} is already a source of event subscription '${record.id}'`, { type });
      }
      return sourceOf(ctx, await saveSourceTypes(ctx, record, [...record.source_types, type]), type);
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
      const record = await subscription(ctx, input);
      return {
        sources: record.source_types.map((type) => sourceOf(ctx, record, type)),
        uri: absoluteUri(ctx.baseUrl, `${eventSubscriptions.path}/${record.id}/sources`),
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
      return sourceOf(ctx, await subscription(ctx, input), input.params.type!);
    },
  },
  {
    ...common,
    id: 'event_sources.update',
    method: 'PATCH',
    path: item,
    status: 200,
    mutates: false,
    body: SourcePatch,
    summary: 'Update a source (sources have no updatable fields; `{}` answers the source)',
    async run(ctx, input) {
      parseInput(SourcePatch, stripPathIds(input.body ?? {}, input.params));
      return sourceOf(ctx, await subscription(ctx, input), input.params.type!);
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
      const record = await subscription(ctx, input);
      const { type } = sourceOf(ctx, record, input.params.type!);
      await saveSourceTypes(ctx, record, record.source_types.filter((t) => t !== type));
      return undefined;
    },
  },
];

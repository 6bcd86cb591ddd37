import * as v from 'valibot';
import type { ChildDefinition } from '../../engine/children.ts';
import type { OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { absoluteUri } from '../../conventions/refs.ts';
import { checkCatalogue, eventSubscriptions, saveSourceTypes, SourceInput, sourceUri, type EventSubscriptionRecord } from './subscriptions.ts';
import { EVENTS_ERRORS } from './errors.ts';

/**
 * Event sources (/event_subscriptions/{subscription_id}/sources/{type}): the source types of one
 * subscription, served one by one and keyed by the type string itself. They are not records of
 * their own: each change rewrites the subscription (and emits event_subscription_updated.v0).
 * Sources have no updatable field, so PATCH accepts only `{}` and answers the source unchanged.
 */

const SourcePatch = v.strictObject({});

/** The source `type` of a subscription, or the 404 5125. */
function findSource(record: EventSubscriptionRecord, type: string): string {
  if (!record.source_types.includes(type)) {
    throw new ApiError(EVENTS_ERRORS.EVENT_SOURCE_NOT_FOUND, `event subscription '${record.id}' has no source of type ${JSON.stringify(type)}`, { type });
  }
  return type;
}

const sourceOf = (ctx: OperationContext, record: EventSubscriptionRecord, type: string) => ({ type, uri: sourceUri(ctx, record.id, type) });

/** Sources: a child collection of event subscriptions, keyed by the type itself. */
export const eventSources: ChildDefinition<EventSubscriptionRecord, string, typeof SourceInput, typeof SourcePatch> = {
  name: 'event_sources',
  parent: eventSubscriptions,
  parentParam: 'subscription_id',
  segment: 'sources',
  childParam: 'type',
  summaries: {
    create: 'Add a source (an event type) to an event subscription',
    list: "List an event subscription's sources",
    get: 'Get one source of an event subscription',
    update: 'Update a source (sources have no updatable fields; `{}` answers the source)',
    delete: 'Remove a source from an event subscription',
  },
  createSchema: SourceInput,
  updateSchema: SourcePatch,
  find: (_ctx, record, type) => findSource(record, type),
  async create(ctx, record, { type }) {
    checkCatalogue(ctx, type, 'type');
    if (record.source_types.includes(type)) {
      throw new ApiError(EVENTS_ERRORS.EVENT_SOURCE_DUPLICATE, `type: ${type} is already a source of event subscription '${record.id}'`, { type });
    }
    return type;
  },
  save: (ctx, record, previous, next) =>
    saveSourceTypes(ctx, record, next === undefined ? record.source_types.filter((t) => t !== previous) : [...record.source_types, next]),
  respond: sourceOf,
  list: (ctx, record) => ({
    sources: record.source_types.map((type) => sourceOf(ctx, record, type)),
    uri: absoluteUri(ctx.baseUrl, `${eventSubscriptions.path}/${record.id}/sources`),
  }),
};

import { defineFamily } from '../../engine/family.ts';
import { EVENTS_ERRORS } from './errors.ts';
import { EVENT_CONTROL_OPERATIONS } from './control.ts';
import { eventDestinations } from './destinations.ts';
import type { Delivery } from './outbox.ts';
import { deliver, recordEvents } from './recorder.ts';
import { eventSettings, eventsOf, type EventOptions } from './settings.ts';
import { eventSources } from './sources.ts';
import { eventSubscriptions, subscribedTo } from './subscriptions.ts';

export type { EventOptions } from './settings.ts';
export { eventCatalogue, AGENT_SESSION_EVENTS } from './catalogue.ts';
export { readOutbox, clearOutbox, type BurrowEvent, type Delivery, type EventSink, type OutboxContents } from './outbox.ts';
export { eventsOf } from './settings.ts';

/**
 * Event destinations, subscriptions and their sources. Every write's emitted events are recorded in
 * the outboxes of the destinations subscribed to them, in the write's own transaction (the write
 * hook), and handed to the embedder's sinks once it commits.
 */
export const eventsFamily = defineFamily({
  name: 'events',
  errors: EVENTS_ERRORS,
  kinds: { event_destinations: eventDestinations, event_subscriptions: eventSubscriptions },
  children: [eventSources],
  controlOperations: EVENT_CONTROL_OPERATIONS,
  setup: (options, kinds) => eventSettings(options as EventOptions, kinds),
  writeHook: {
    inside: (ctx, emitted) => recordEvents(ctx, emitted, eventsOf(ctx).outboxLimit),
    committed: (deliveries, services) => ((deliveries as readonly Delivery[]).length === 0 ? undefined : deliver(eventsOf(services), deliveries as readonly Delivery[])),
    listens: subscribedTo,
  },
  examples: {
    event_destinations: { body: () => ({ format: 'json', target: { logs: { auth: { role: { role_ref: 'r' } }, log_group_ref: 'g' } } }) },
    event_subscriptions: { body: async (seed) => ({ destination_ids: [await seed.id('event_destinations')] }) },
  },
});

export { EVENTS_ERRORS } from './errors.ts';

import type { OperationContext, Services } from '../../engine/context.ts';
import type { KindIndex } from '../../engine/context.ts';
import { eventCatalogue } from './catalogue.ts';
import type { Delivery, EventSink } from './outbox.ts';

/** The events family's options of `createBurrow`. */
export interface EventOptions {
  /** Events kept per event destination's outbox before the oldest are dropped (default 1000). */
  outboxLimit?: number;
  /** Receive every delivered event after its operation committed (forward events anywhere). */
  eventSinks?: readonly EventSink[];
  /** Reports a sink that threw (default: console.error); the operation has succeeded regardless. */
  onSinkError?: (error: unknown, delivery: Delivery) => void;
}

/** The events family's state in one instance. */
export interface EventSettings {
  /** The event catalogue: every type a subscription source may name. */
  readonly eventTypes: ReadonlySet<string>;
  readonly outboxLimit: number;
  readonly sinks: readonly EventSink[];
  readonly onSinkError: (error: unknown, delivery: Delivery) => void;
}

/** Validates the options and derives the catalogue from the instance's kinds. */
export function eventSettings(options: EventOptions, kinds: KindIndex): EventSettings {
  const limit = options.outboxLimit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1)) {
    throw new Error(`burrow: outboxLimit must be a whole number of at least 1 (got ${limit})`);
  }
  return {
    eventTypes: new Set(eventCatalogue(kinds.kinds)),
    outboxLimit: limit ?? 1000,
    sinks: options.eventSinks ?? [],
    onSinkError: options.onSinkError ?? ((error) => console.error('burrow: event sink failed', error)),
  };
}

/** The events family's settings of the instance an operation runs in. */
export function eventsOf(services: Pick<Services, 'state'> | Pick<OperationContext, 'services'>): EventSettings {
  const state = 'services' in services ? services.services.state : services.state;
  return state('events') as EventSettings;
}

import type { EmittedEvent, OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { makeRef } from '../../conventions/refs.ts';
import { readOwner } from '../../engine/owners.ts';
import { respond } from '../../engine/resource.ts';
import { eventDestinations, type EventDestinationRecord } from './destinations.ts';
import { appendToOutbox, type BurrowEvent, type Delivery } from './outbox.ts';
import type { EventSettings } from './settings.ts';
import { subscriptionsWithSource } from './subscriptions.ts';

/**
 * The event recorder: turns what an operation emitted into outbox entries, inside the operation's
 * write transaction, so a failed operation records nothing. Each event goes once to every
 * destination of every subscription that has a source of its type, in emission order.
 *
 * Cost per event: one index lookup for its type (subscriptions.ts keeps the type → subscriptions
 * index), plus one read per matching subscription and an O(1) append per destination; the
 * principal and each destination are read at most once per operation. Events nobody subscribed
 * to cost the index lookup only.
 */

async function principalOf(ctx: OperationContext): Promise<BurrowEvent['principal']> {
  const { principal } = ctx;
  if (!principal.ownerId) return null;
  const owner = await readOwner(ctx, principal.ownerId);
  return {
    id: principal.ownerId,
    subject: typeof owner?.name === 'string' && owner.name !== '' ? owner.name : principal.ownerId,
    source: 'API',
    credential: principal.apiKeyId ? makeRef(ctx.baseUrl, ctx.services.kinds.kindOfId(principal.apiKeyId)?.path ?? '/api_keys', principal.apiKeyId) : null,
  };
}

/**
 * Records the operation's events in the outboxes of the destinations that subscribe to them;
 * returns the deliveries for the sinks, which `deliver` hands over after commit.
 */
export async function recordEvents(ctx: OperationContext, emitted: readonly EmittedEvent[], outboxLimit: number): Promise<Delivery[]> {
  if (emitted.length === 0) return [];
  const deliveries: Delivery[] = [];
  const destinationsByType = new Map<string, readonly string[]>();
  const destinationResponses = new Map<string, Record<string, unknown>>();
  let principal: BurrowEvent['principal'] | undefined;

  for (const { type, object } of emitted) {
    let destinationIds = destinationsByType.get(type);
    if (!destinationIds) {
      const subscriptions = await subscriptionsWithSource(ctx, type);
      destinationIds = [...new Set(subscriptions.flatMap((s) => s.destination_ids))];
      destinationsByType.set(type, destinationIds);
    }
    if (destinationIds.length === 0) continue;

    principal ??= await principalOf(ctx);
    const event: BurrowEvent = {
      event_id: ctx.ids.id('ev'),
      event_type: type,
      event_timestamp: formatTime(ctx.clock.now()),
      account_id: ctx.account,
      principal,
      object,
    };
    for (const destinationId of destinationIds) {
      let destination = destinationResponses.get(destinationId);
      if (!destination) {
        const record = await ctx.tx.get({ account: ctx.account, kind: eventDestinations.kind }, destinationId);
        // A subscription's destinations cannot be deleted, so a missing one means damaged state.
        if (!record) continue;
        destination = respond(ctx, eventDestinations, record as unknown as EventDestinationRecord);
        destinationResponses.set(destinationId, destination);
      }
      await appendToOutbox(ctx.tx, ctx.account, destinationId, event, outboxLimit);
      deliveries.push({ account: ctx.account, destinationId, destination, event });
    }
  }
  return deliveries;
}

/** Hands committed events to the embedding application's sinks; a failing sink is reported, not raised. */
export async function deliver(settings: EventSettings, deliveries: readonly Delivery[]): Promise<void> {
  for (const sink of settings.sinks) {
    for (const delivery of deliveries) {
      try {
        await sink.deliver(delivery);
      } catch (error) {
        settings.onSinkError(error, delivery);
      }
    }
  }
}

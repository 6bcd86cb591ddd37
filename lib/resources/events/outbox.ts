import type { EmittedEvent, OperationContext } from '../../context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { makeRef } from '../../conventions/refs.ts';
import { allRecords } from '../../resource.ts';
import type { StoreReader, StoreTransaction } from '../../store.ts';
import { EVENT_SUBSCRIPTION_KIND } from './kinds.ts';
import type { EventSubscriptionRecord } from './subscriptions.ts';

/**
 * Event emission into per-destination outboxes. Inside the transaction of the operation that
 * caused them, each event goes to every destination of every subscription that has a source of
 * its type; a failed operation therefore emits nothing. An outbox is bounded: past its limit the
 * oldest event is dropped and counted. Outboxes live in the store (they survive restarts on the
 * JSON-file store) as records keyed by a zero-padded sequence number, so appending and dropping
 * are O(1). After commit, the events are also handed to the embedding application's sinks.
 *
 * Cost per operation with events: one scan of the account's subscriptions (usually a handful).
 */

/** The payload of one event. */
export interface BurrowEvent {
  readonly event_id: string;
  readonly event_type: string;
  readonly event_timestamp: string;
  readonly account_id: string;
  readonly principal: { id: string; subject: string; source: 'API'; credential: { id: string; uri: string } | null } | null;
  readonly object: unknown;
}

/** One event on its way to one destination. */
export interface Delivery {
  readonly account: string;
  readonly destinationId: string;
  readonly event: BurrowEvent;
}

/** Receives every delivered event after its transaction committed (forward it anywhere). */
export interface EventSink {
  deliver(delivery: Delivery): void | Promise<void>;
}

export interface OutboxContents {
  /** Oldest first. */
  readonly events: BurrowEvent[];
  /** Events dropped because the outbox was full. */
  readonly dropped: number;
  readonly limit: number;
}

interface OutboxMeta {
  readonly id: string;
  readonly next: number;
  readonly oldest: number;
  readonly dropped: number;
}

const entries = (account: string, destinationId: string) => ({ account, kind: `event_outbox@${destinationId}` });
const metaScope = (account: string) => ({ account, kind: 'event_outbox' });
const sequenceId = (n: number) => String(n).padStart(15, '0');

async function readMeta(reader: StoreReader, account: string, destinationId: string): Promise<OutboxMeta> {
  return ((await reader.get(metaScope(account), destinationId)) as OutboxMeta | undefined) ?? { id: destinationId, next: 0, oldest: 0, dropped: 0 };
}

/** Appends to a destination's outbox, dropping the oldest events past `limit`. */
async function append(tx: StoreTransaction, account: string, destinationId: string, event: BurrowEvent, limit: number): Promise<void> {
  const meta = await readMeta(tx, account, destinationId);
  await tx.put(entries(account, destinationId), { id: sequenceId(meta.next), ...event });
  let { oldest, dropped } = meta;
  const next = meta.next + 1;
  while (next - oldest > limit) {
    await tx.delete(entries(account, destinationId), sequenceId(oldest));
    oldest++;
    dropped++;
  }
  await tx.put(metaScope(account), { id: destinationId, next, oldest, dropped });
}

/** The outbox of a destination. */
export async function readOutbox(reader: StoreReader, account: string, destinationId: string, limit: number): Promise<OutboxContents> {
  const meta = await readMeta(reader, account, destinationId);
  const events: BurrowEvent[] = [];
  let beforeId: string | undefined;
  for (;;) {
    const page = await reader.page(entries(account, destinationId), beforeId === undefined ? { limit: 500 } : { beforeId, limit: 500 });
    for (const { id: _sequence, ...event } of page) events.push(event as unknown as BurrowEvent);
    if (page.length < 500) break;
    beforeId = page[page.length - 1]!.id;
  }
  return { events: events.reverse(), dropped: meta.dropped, limit };
}

/** Empties a destination's outbox and its dropped counter. */
export async function clearOutbox(tx: StoreTransaction, account: string, destinationId: string): Promise<number> {
  let removed = 0;
  for (;;) {
    const page = await tx.page(entries(account, destinationId), { limit: 500 });
    if (page.length === 0) break;
    for (const entry of page) removed += (await tx.delete(entries(account, destinationId), entry.id)) ? 1 : 0;
  }
  await tx.delete(metaScope(account), destinationId);
  return removed;
}

async function principalOf(ctx: OperationContext): Promise<BurrowEvent['principal']> {
  const { principal } = ctx;
  if (!principal.ownerId) return null;
  const kind = principal.ownerId.startsWith('bot_') ? 'bot' : 'user';
  const owner = await ctx.tx.get({ account: ctx.account, kind }, principal.ownerId);
  return {
    id: principal.ownerId,
    subject: typeof owner?.name === 'string' ? owner.name : principal.ownerId,
    source: 'API',
    credential: principal.apiKeyId ? makeRef(ctx.baseUrl, '/api_keys', principal.apiKeyId) : null,
  };
}

/** Turns emitted events into outbox entries inside the operation's transaction. */
export async function recordEvents(ctx: OperationContext, emitted: readonly EmittedEvent[], limit: number): Promise<Delivery[]> {
  const subscriptions = await allRecords<EventSubscriptionRecord>(ctx, EVENT_SUBSCRIPTION_KIND);
  if (subscriptions.length === 0) return [];
  const deliveries: Delivery[] = [];
  let principal: BurrowEvent['principal'] | undefined;
  for (const { type, object } of emitted) {
    const destinations = new Set(subscriptions.filter((s) => s.source_types.includes(type)).flatMap((s) => s.destination_ids));
    if (destinations.size === 0) continue;
    principal ??= await principalOf(ctx);
    const event: BurrowEvent = {
      event_id: ctx.ids.id('ev'),
      event_type: type,
      event_timestamp: formatTime(ctx.clock.now()),
      account_id: ctx.account,
      principal,
      object,
    };
    for (const destinationId of destinations) {
      await append(ctx.tx, ctx.account, destinationId, event, limit);
      deliveries.push({ account: ctx.account, destinationId, event });
    }
  }
  return deliveries;
}

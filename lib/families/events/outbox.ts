import { readAll, type StoreReader, type StoreTransaction } from '../../store.ts';

/**
 * Per-destination outboxes: Burrow never calls a cloud service, so the events a destination
 * receives are kept for the embedding application or test to read (recorder.ts fills them inside
 * the transaction of the operation that caused them). An outbox is bounded: past its limit the
 * oldest event is dropped and counted. Outboxes live in the store, so they survive restarts on the
 * JSON-file store, as records keyed by a zero-padded sequence number next to one meta record
 * (next, oldest, dropped): appending and dropping cost O(1) whatever the outbox holds.
 */

/** The payload of one event. */
export interface BurrowEvent {
  /** `ev_…` */
  readonly event_id: string;
  /** `<object>_<action>.v0` */
  readonly event_type: string;
  /** RFC 3339, UTC, whole seconds. */
  readonly event_timestamp: string;
  readonly account_id: string;
  /** Who caused it: the owner behind the API key used (null when no owner is known). */
  readonly principal: { id: string; subject: string; source: 'API'; credential: { id: string; uri: string } | null } | null;
  /** The resource as the API answers it at that moment (never a secret). */
  readonly object: unknown;
}

/** One event on its way to one destination. */
export interface Delivery {
  readonly account: string;
  readonly destinationId: string;
  /** The destination as the API answers it (its `target` says where to forward; secrets are null). */
  readonly destination: Readonly<Record<string, unknown>>;
  readonly event: BurrowEvent;
}

/** Receives every delivered event after its operation committed (forward it anywhere). */
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
export async function appendToOutbox(tx: StoreTransaction, account: string, destinationId: string, event: BurrowEvent, limit: number): Promise<void> {
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
  const events = (await readAll(reader, entries(account, destinationId))).map(({ id: _sequence, ...event }) => event as unknown as BurrowEvent);
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

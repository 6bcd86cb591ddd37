import { createHash, randomBytes } from 'node:crypto';
import { StoreUnavailableError, type StoreChannel } from '../../../lib/store.ts';

/**
 * The PostgreSQL store's channel between servers (lib/store.ts StoreChannel), on one connection of
 * its own: `LISTEN` on the schema's channel, `pg_notify` to publish, and a session-level advisory
 * lock named after the server, held as long as the connection lives. A server is alive while its
 * lock is granted (`pg_locks`): when its process dies, PostgreSQL ends its connection and the lock
 * goes with it, which the others see at their next look. A channel whose connection broke is
 * closed for good (the others count that server as gone, and end its agents' sessions).
 */

/** The first key of every server lock: 'burs'. The second is a hash of the schema and the server id. */
const LOCK_CLASS = 0x62757273;

const lockKey = (schema: string, serverId: string) => createHash('sha256').update(`${schema}\0${serverId}`).digest();

/** The part of a pg.Client the channel uses (the store makes the client: one module imports pg). */
export interface ChannelClient {
  connect(): Promise<unknown>;
  query<R extends Record<string, unknown> = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: R[] }>;
  on(event: 'error' | 'end', listener: () => void): unknown;
  on(event: 'notification', listener: (notification: { channel: string; payload?: string }) => void): unknown;
  end(): Promise<void>;
}

export async function openPostgresChannel(client: ChannelClient, schema: string, location: string): Promise<StoreChannel> {
  const serverId = `srv_${randomBytes(12).toString('hex')}`;
  const listeners: ((message: string) => void)[] = [];
  const name = `burrow:${schema}`;
  let closed = false;
  client.on('error', () => void (closed = true));
  client.on('end', () => void (closed = true));
  client.on('notification', (notification) => {
    if (notification.channel !== name || notification.payload === undefined) return;
    for (const listener of listeners) listener(notification.payload);
  });
  try {
    await client.connect();
    await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, lockKey(schema, serverId).readInt32BE(0)]);
    await client.query(`LISTEN "${name.replaceAll('"', '""')}"`);
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new StoreUnavailableError(`PostgreSQL at ${location}: cannot open the channel between servers (${(error as Error).message})`, { cause: error });
  }
  const usable = () => {
    if (closed) throw new StoreUnavailableError(`the channel to PostgreSQL at ${location} is closed`);
  };
  return {
    serverId,
    async publish(message) {
      usable();
      await client.query('SELECT pg_notify($1, $2)', [name, message]);
    },
    subscribe(listener) {
      listeners.push(listener);
    },
    async alive(serverIds) {
      usable();
      const wanted = new Map(serverIds.map((id) => [lockKey(schema, id).readUInt32BE(0), id]));
      const held = await client.query<{ objid: string }>(
        `SELECT objid::text FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1 AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [LOCK_CLASS],
      );
      return new Set(held.rows.flatMap((row) => wanted.get(Number(row.objid)) ?? []));
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.end().catch(() => undefined);
    },
  };
}

import { createServer, type Server, type ServerOpts, type Socket } from 'node:net';

/** Where a gateway listens. */
export interface GatewayAddress {
  readonly host: string;
  readonly port: number;
}

/** What the listener needs of a connection (a GatewayConnection): its session, and its shutdown. */
export interface ListenedConnection<Session> {
  readonly session: Session | undefined;
  shutdown(): Promise<void>;
}

/** The listening side of a gateway. */
export interface GatewayListener<Session> {
  /** Starts listening (port 0 picks a free one); answers the address bound. */
  listen(host: string, port: number): Promise<GatewayAddress>;
  address(): GatewayAddress | null;
  /** The authenticated sessions now live. */
  sessions(): Session[];
  /** Stops listening and ends every connection; resolves once all are closed and reported. */
  close(): Promise<void>;
}

/**
 * The listening side both gateways share: `accept` makes each socket a connection (or refuses it,
 * answering undefined), kept until its socket closes (`forget`); close stops listening and shuts
 * every connection down. `name` says which gateway in errors.
 */
export function createGatewayListener<Session extends { readonly ended: unknown }>(
  name: string,
  serverOptions: ServerOpts,
  accept: (socket: Socket, forget: () => void) => ListenedConnection<Session> | undefined,
): GatewayListener<Session> {
  const connections = new Set<ListenedConnection<Session>>();
  let server: Server | undefined;
  const address = (): GatewayAddress | null => {
    const bound = server?.address();
    return bound && typeof bound === 'object' ? { host: bound.address, port: bound.port } : null;
  };
  return {
    listen(host, port) {
      if (server) return Promise.reject(new Error(`${name} is already listening`));
      const listening = createServer(serverOptions, (socket) => {
        const connection = accept(socket, () => connections.delete(connection!));
        if (connection) connections.add(connection);
      });
      server = listening;
      return new Promise((resolve, reject) => {
        listening.once('error', reject);
        listening.listen(port, host, () => {
          listening.off('error', reject);
          resolve(address()!);
        });
      });
    },
    address,
    sessions() {
      return [...connections].flatMap((connection) => (connection.session && !connection.session.ended ? [connection.session] : []));
    },
    async close() {
      const closed = server ? new Promise<void>((resolve) => server!.close(() => resolve())) : Promise.resolve();
      await Promise.all([...connections].map((connection) => connection.shutdown()));
      await closed;
      server = undefined;
    },
  };
}

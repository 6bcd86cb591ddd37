/**
 * Real listening ports for TCP endpoints: the seam between the session path (lib/families/agents)
 * and the ingress that listens (adapters/ingress). A port is a property of the server whose
 * ingress listens, not of the store: when this process runs an ingress with TCP listeners it
 * `attach`es them here; a TCP bind of a transport whose sessions that ingress routes then asks it
 * for a port (any free one, or a reserved address's own port) before the bind is stored, so the
 * tunnel's URL is the address clients really dial. The lease is kept by tunnel and released when
 * the tunnel or its session ends (the session path calls `releaseTunnel` / `releaseSession`).
 * Without an ingress a TCP bind gets a virtual address, as before.
 *
 * TCP edges' hostports are stored records; the ingress listens on their ports by itself. A change
 * made in this process is told it at once (`edgesChanged`, after the write commits); the ingress
 * finds changes other servers of the store made by looking again now and then.
 */

/** A port the ingress listens on for one TCP endpoint, until released. */
export interface TcpPortLease {
  /** `host:port` as clients dial it: the ingress's public host (else `localhost`, or the address it listens on) and the port. */
  readonly address: string;
  readonly port: number;
  /** Sends the port's connections to the endpoint `url` (the tunnel's, once stored); until then they are closed. */
  serve(url: string): void;
  /** Stops listening; connections under way end with their tunnel. */
  release(): void;
}

/** The TCP side of a running ingress. */
export interface TcpPortListener {
  /** Listens on `port` of the ingress host (0: any free one); rejects, naming the port and why, when it cannot. */
  listen(port: number): Promise<TcpPortLease>;
  /** TCP edges' hostports changed in this process: listen to match (the ingress reports its own failures). */
  edgesChanged(): void;
}

interface Held {
  readonly sessionId: string;
  readonly lease: TcpPortLease;
}

export class TcpPorts {
  #listener: TcpPortListener | undefined;
  readonly #leases = new Map<string, Held>();

  /** The ingress's TCP listener, when one is attached. */
  get listener(): TcpPortListener | undefined {
    return this.#listener;
  }

  /** Attaches the ingress's listener; answers the function that detaches it (its leases are its own to close). */
  attach(listener: TcpPortListener): () => void {
    this.#listener = listener;
    return () => {
      if (this.#listener !== listener) return;
      this.#listener = undefined;
      this.#leases.clear();
    };
  }

  /** Keeps `lease` until tunnel `tunnelId` of session `sessionId` ends. */
  hold(sessionId: string, tunnelId: string, lease: TcpPortLease): void {
    this.#leases.set(tunnelId, { sessionId, lease });
  }

  /** Releases the port of tunnel `tunnelId`, if it holds one. */
  releaseTunnel(tunnelId: string): void {
    this.#leases.get(tunnelId)?.lease.release();
    this.#leases.delete(tunnelId);
  }

  /** Releases the ports of every tunnel of session `sessionId`. */
  releaseSession(sessionId: string): void {
    for (const [tunnelId, held] of this.#leases) if (held.sessionId === sessionId) this.releaseTunnel(tunnelId);
  }

  /** Tells the ingress (if one is attached) that TCP edges' hostports changed. */
  edgesChanged(): void {
    this.#listener?.edgesChanged();
  }
}

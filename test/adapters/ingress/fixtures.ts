import ngrok, { type Session } from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import type { Server, Socket } from 'node:net';
import { startServer, type RunningServer } from '../../helpers.ts';

/**
 * The parts of the ingress tests that run a real `burrow serve`: the server with its agent gateway
 * and the ingress listeners asked for, the vendor's agent connected to it, and local services
 * behind the agent (closed with their connections).
 */

export interface IngressServer {
  readonly server: RunningServer;
  /** Burrow's CA (GET /_burrow/ca.pem). */
  readonly ca: string;
  /** The port of each listener of health's `listeners` (`http_ingress`, `tls_ingress`…). */
  port(listener: string): number;
  /**
   * The vendor's agent with a new tunnel credential of the account `token` holds (default: the
   * admin's); closed after the test (or suite: anything with `after`). `lost` settles once the agent
   * has seen its connection go and given up on it (for a test that stops the server under it):
   * awaited, no call of the agent's into this process is left for after the test — the SDK (1.7.0)
   * aborts the process when one comes while node is exiting.
   */
  agent(t: { after(end: () => unknown): void }, token?: string): Promise<Session & { readonly lost: Promise<void> }>;
  /** Reserves `domain` in the default account, with the TLS certificate `certificateId`. */
  reserve(domain: string, certificateId?: string): Promise<void>;
  stop(): Promise<void>;
}

/** `burrow serve --agent-addr 127.0.0.1:0` plus `args` (the ingress listeners), with `env` added to its environment; `--quiet` unless `quiet` is false. */
export async function startIngressServer(args: string[], env: Record<string, string> = {}, quiet = true): Promise<IngressServer> {
  const server = await startServer([...(quiet ? ['--quiet'] : []), '--agent-addr', '127.0.0.1:0', ...args], env);
  const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
  const listeners = health.body.listeners as Record<string, string | null>;
  const ca = await (await fetch(`${server.url}/_burrow/ca.pem`)).text();
  return {
    server,
    ca,
    port: (listener) => Number(listeners[listener]!.split(':').pop()),
    async agent(t, token = server.token!) {
      const credential = await server.request('POST', '/credentials', { description: 'ingress test' }, { token });
      assert.equal(credential.status, 201, credential.text);
      let done = false;
      t.after(() => void (done = true));
      let gaveUp = () => {};
      const lost = new Promise<void>((resolve) => (gaveUp = resolve));
      const session = await new ngrok.SessionBuilder()
        .authtoken(credential.body.token)
        .serverAddr(listeners.agent!.replace('127.0.0.1', 'localhost'))
        .caCert(Buffer.from(ca))
        .handleDisconnection(() => {
          if (!done && !server.process.killed) return true;
          gaveUp();
          return false;
        })
        .connect();
      t.after(() => session.close().catch(() => undefined));
      return Object.assign(session, { lost });
    },
    async reserve(domain, certificateId) {
      const reserved = await server.request('POST', '/reserved_domains', { domain, ...(certificateId ? { certificate_id: certificateId } : {}) });
      assert.equal(reserved.status, 201, reserved.text);
    },
    stop: async () => void (await server.stop()),
  };
}

/**
 * Listens on a free loopback port; answers the port and a close that also ends the connections
 * still open (an agent keeps its own to the service open).
 */
export async function listenLocally(server: Server): Promise<{ port: number; close: () => Promise<void> }> {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of open) socket.destroy();
      return closed;
    },
  };
}

/** An HTTP app that answers what it received as JSON (`url`, `headers`). */
export function startJsonApp() {
  return listenLocally(
    createHttpServer((req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ url: req.url, headers: req.headers }));
    }),
  );
}

import { after, before } from 'node:test';
import ngrokApi from '@ngrok/ngrok-api';
import { startServer, type RunningServer } from '../helpers.ts';

/**
 * The vendor's official npm client (0.11.0), unchanged, against a live Burrow server started for
 * the calling test file. Deletes go through plain fetch: that client version rejects every correct
 * empty 204 (docs/compatibility.md).
 */

const { Ngrok } = ngrokApi as unknown as { Ngrok: new (config: { apiToken: string; baseUrl: string }) => any };

export interface OfficialClientFixture {
  readonly server: RunningServer;
  readonly client: any;
  /** Another official client on the same server, calling with `token` (a bot's key, a member's). */
  clientWith(token: string): any;
  /** DELETE `path` with plain fetch; returns the status. */
  deleteWithFetch(path: string): Promise<number>;
}

/** Registers before/after hooks that run a server and build a client; read the fields inside tests. */
export function useOfficialClient(args: string[] = ['--quiet']): OfficialClientFixture {
  let server: RunningServer | undefined;
  let client: any;
  before(async () => {
    server = await startServer(args);
    client = new Ngrok({ apiToken: server.token!, baseUrl: server.url });
  });
  after(async () => {
    await server?.stop();
  });
  return {
    get server() {
      return server!;
    },
    get client() {
      return client;
    },
    clientWith(token) {
      return new Ngrok({ apiToken: token, baseUrl: server!.url });
    },
    async deleteWithFetch(path) {
      const res = await fetch(`${server!.url}${path}`, { method: 'DELETE', headers: { Authorization: `Bearer ${server!.token}`, 'Ngrok-Version': '2' } });
      return res.status;
    },
  };
}

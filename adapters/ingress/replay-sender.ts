import { request } from 'node:http';
import type { BurrowCore } from '../../lib/burrow.ts';
import type { ReplayRequest } from '../../lib/journal/replay.ts';
import type { TrafficSender } from '../../lib/journal/traffic-journal.ts';

/**
 * How the traffic journal replays an exchange (lib/journal/traffic-journal.ts `replay`): the
 * request goes to this ingress's HTTP listener as a client's would, so the endpoint's policy runs
 * on it again, and the exchange it makes is found in the journal by the client port it came from.
 */

/** How long a replay waits for its exchange to be journaled once the answer has come. */
const RECORDED_WITHIN_MS = 5_000;

export function replaySender(burrow: BurrowCore<any>, listener: { readonly host: string; readonly port: number }): TrafficSender {
  return (replayed: ReplayRequest) =>
    new Promise<number>((resolve, reject) => {
      let localPort: number | undefined;
      let timer: NodeJS.Timeout | undefined;
      const seen = new Map<number, number>();
      const finish = (seq: number | undefined, error?: Error) => {
        stop();
        clearTimeout(timer);
        if (seq !== undefined) resolve(seq);
        else reject(error);
      };
      // Exchanges are journaled when their answer closes, which may be before or after the client has read it.
      const stop = burrow.traffic.watch((traffic, seq) => {
        if (traffic.protocol !== 'http' || !traffic.conn) return;
        if (localPort === traffic.conn.clientPort) finish(seq);
        else seen.set(traffic.conn.clientPort, seq);
      });
      /** The answer came, or the connection ended without one (a policy may close it): the exchange is, or soon will be, journaled. */
      const settle = (error?: Error) => {
        const already = localPort === undefined ? undefined : seen.get(localPort);
        if (already !== undefined) return finish(already);
        if (localPort === undefined) return finish(undefined, error ?? new Error('the replay never reached the ingress'));
        timer ??= setTimeout(() => finish(undefined, new Error(`the replayed exchange was not journaled within ${RECORDED_WITHIN_MS} ms`)), RECORDED_WITHIN_MS);
      };
      const req = request({ host: listener.host, port: listener.port, method: replayed.method, path: replayed.target, headers: replayed.headers.flatMap(([name, value]) => [name, value]), agent: false, setHost: false });
      req.on('socket', (socket) => socket.once('connect', () => (localPort = socket.localPort)));
      req.on('error', (error) => settle(error));
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => settle());
      });
      req.end(replayed.body);
    });
}

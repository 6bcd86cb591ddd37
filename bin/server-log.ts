import type { RequestLog } from '../adapters/http/handler.ts';
import type { AgentSessionEvent } from '../adapters/session-events.ts';
import { hostPort } from '../adapters/addresses.ts';
import { decidingRule, redactUrl, type Traffic } from '../lib/index.ts';

/**
 * The server's log, one line per event, as text or as one JSON object a line (`--log-format`):
 * the start-up lines; one line per API request and per exchange the ingress carried (what
 * `--quiet` silences); an agent session opened and closed, by either gateway; the store lost and
 * regained. Lines go out once per turn of the event loop: stdout to a pipe or file is written
 * synchronously, so a write per request under load would hold the loop once per request. Lines
 * that are not per request are written at once, after any still pending, in order.
 *
 * JSON lines carry `time` (ISO 8601, system time) and, but for API requests (whose fields are
 * those of adapters/http's RequestLog), `msg` and `event`: `agent_session_opened`,
 * `agent_session_closed`, `ingress`, `store_lost`, `store_regained`. No line holds a secret: query
 * values whose names look secret are `***`.
 */

export interface ServerLogOptions {
  readonly format: 'text' | 'json';
  /** No per-request lines (API and ingress); the others stay. */
  readonly quiet: boolean;
  readonly out: NodeJS.WritableStream;
}

export interface ServerLog {
  /** A start-up or shutdown line: `text`, and in JSON `fields` beside it. */
  say(text: string, fields?: Record<string, unknown>): void;
  /** One answered API request (the HTTP handler's `log`); undefined with `quiet`. */
  readonly request: ((entry: RequestLog) => void) | undefined;
  /** One exchange or TCP connection the ingress carried (the traffic journal's watcher). */
  traffic(traffic: Traffic): void;
  /** An agent session opened or closed (the gateways' `onSession`). */
  session(event: AgentSessionEvent): void;
  /** The store stopped answering, or answers again (`Store.watchAvailability`). */
  store(available: boolean, reason: string): void;
  /** Writes the pending lines now. */
  flush(): void;
}

export function createServerLog({ format, quiet, out }: ServerLogOptions): ServerLog {
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const text = `${pending.join('\n')}\n`;
    pending = [];
    out.write(text);
  };
  const batched = (line: string) => {
    if (pending.push(line) === 1) setImmediate(flush);
  };
  const now = () => new Date().toISOString();
  /** A line of its own: `text` (after the time, in text), or `{time, msg, event, ...fields}`. */
  const event = (name: string, text: string, fields: Record<string, unknown>) => {
    flush();
    out.write(`${format === 'json' ? JSON.stringify({ time: now(), msg: text, event: name, ...fields }) : `${now()} ${text}`}\n`);
  };
  return {
    say(text, fields = {}) {
      flush();
      out.write(`${format === 'json' ? JSON.stringify({ time: now(), msg: text, ...fields }) : text}\n`);
    },
    request: quiet
      ? undefined
      : (entry) =>
          batched(
            format === 'json'
              ? JSON.stringify(entry)
              : `${entry.time} ${entry.method} ${entry.path}${entry.query} ${entry.status}${entry.errorCode ? ` ${entry.errorCode}` : ''} ${entry.ms}ms ${entry.operationId}${entry.operation ? ` ${entry.operation}` : ''}${entry.warning ? ` warning: ${entry.warning}` : ''}${entry.fault ? ` fault ${entry.fault}` : ''}`,
          ),
    traffic(traffic) {
      if (quiet) return;
      const line = trafficLine(traffic);
      batched(format === 'json' ? JSON.stringify({ time: now(), msg: line.text, event: 'ingress', ...line.fields }) : `${now()} ${line.text}`);
    },
    session(session) {
      const client = session.event === 'opened' ? hostPort(session.client.ip, session.client.port) : '';
      if (session.event === 'opened') {
        event('agent_session_opened', `agent session ${session.id} opened: ${session.transport} ${session.agentVersion || '(no version)'} from ${client}, account ${session.account}`, {
          session_id: session.id,
          transport: session.transport,
          agent_version: session.agentVersion,
          client,
          account_id: session.account,
        });
      } else {
        event('agent_session_closed', `agent session ${session.id} closed: ${session.reason}${session.message ? ` (${session.message})` : ''}`, {
          session_id: session.id,
          transport: session.transport,
          account_id: session.account,
          reason: session.reason,
          message: session.message,
        });
      }
    },
    store(available, reason) {
      if (available) event('store_regained', 'store regained: it answers again', {});
      else event('store_lost', `store lost: ${reason}`, { reason });
    },
    flush,
  };
}

/**
 * One exchange as a log line, like an API request's: method, URL (secret-looking query values
 * `***`), status and error code, or a TCP connection's bytes; duration; the endpoint; and the rule
 * that decided (the policy rule whose action ended the exchange, else one that failed), if any.
 */
function trafficLine(traffic: Traffic): { text: string; fields: Record<string, unknown> } {
  const endpoint = traffic.endpoints[0];
  const ms = Math.round(traffic.durationMs * 10) / 10;
  const decided = decidingRule(traffic.rules);
  // `source phase[index] (name): action`, or `: failed` for a rule that failed.
  const rule = decided ? `${decided.rule.source} ${decided.rule.phase}[${decided.rule.index}]${decided.rule.name ? ` (${decided.rule.name})` : ''}: ${decided.action ?? 'failed'}` : null;
  const common = {
    protocol: traffic.protocol,
    ms,
    endpoint_id: endpoint?.id ?? null,
    endpoint_url: endpoint?.url ?? null,
    client: traffic.conn ? hostPort(traffic.conn.clientIp, traffic.conn.clientPort) : null,
    answered_by: traffic.answeredBy,
    rule,
  };
  const tail = `${ms}ms ${endpoint ? `${endpoint.id} ${endpoint.url}` : 'no endpoint'}${rule ? ` rule ${rule}` : ''}${traffic.message ? ` (${traffic.message})` : ''}`;
  if (traffic.protocol === 'tcp') {
    const target = endpoint?.url ?? (traffic.serverName || hostPort(traffic.conn.serverIp, traffic.conn.serverPort));
    return { text: `TCP ${target} ${traffic.bytesIn}B in ${traffic.bytesOut}B out ${tail}`, fields: { ...common, bytes_in: traffic.bytesIn, bytes_out: traffic.bytesOut } };
  }
  const url = redactUrl(traffic.request.url, '***');
  const status = traffic.response?.status ?? 0;
  const errorCode = traffic.response?.headers.find(([name]) => name.toLowerCase() === 'ngrok-error-code')?.[1];
  return {
    text: `${traffic.request.method} ${url} ${status}${errorCode ? ` ${errorCode}` : ''} ${tail}`,
    fields: { ...common, method: traffic.request.method, url, status, error_code: errorCode ?? null, bytes_in: traffic.request.bodyBytes, bytes_out: traffic.response?.bodyBytes ?? 0 },
  };
}


import type { BodyReplacement, EventStreamMessage, Phase, PolicyLogEntry, TlsHandshake, TlsTermination } from '../traffic/decisions.ts';
import type { ConnectionFacts, EndpointFacts, RequestBody } from '../traffic/facts.ts';

/** The request as the phase sees it: url-rewrite and header actions change it for later rules. */
export interface RequestState {
  method: string;
  url: string;
  readonly version: string;
  headers: [string, string][];
  readonly receivedAt: Date;
  readonly body?: RequestBody;
  /** The body once an action read it (null: longer than the limit), and when. */
  bodyRead?: { readonly bytes: Uint8Array | null; readonly at: Date };
  /** request-body-find-replace changed the body (`bodyRead`): the upstream gets that instead. */
  bodyReplaced?: boolean;
  /** The trailers after the body, read before the phases of a policy that reads `req.trailers`. */
  trailers?: [string, string][];
}

/** The upstream response as the phase sees it: header actions change it for later rules. */
export interface ResponseState {
  readonly status: number;
  headers: [string, string][];
  /** Its trailers, when the host read the body first (a policy that reads `res.trailers`). */
  readonly trailers?: [string, string][];
}

/**
 * `secrets.get(vault, name)`: expressions evaluate synchronously, so the engine reads every secret
 * a policy names (literal arguments, found in its text: functions.ts `secretReferences`) before a
 * phase runs into `Scope.secrets`, and the function reads one back as this pseudo-variable; a
 * policy with computed arguments also gets the account's secrets (`Scope.accountSecrets`).
 */
export const secretVariable = (vault: string, name: string) => `\u0000secret\u0000${vault}\u0000${name}`;

/** A variable or function the engine cannot provide here, with the reason (it becomes a 5xx naming both). */
export class Unavailable extends Error {
  constructor(
    readonly subject: string,
    reason: string,
  ) {
    super(`${subject} is not available: ${reason}`);
  }
}

/**
 * The state of one phase evaluation: the facts, the request and response as changed so far, the
 * phase's `vars` (set-vars) and action results (`actions.ngrok.*`), and a memo of derived values
 * (parsed URL, cookies, user agent) that is dropped whenever the request or response changes.
 */
export class Scope {
  readonly vars: Record<string, unknown> = {};
  readonly actionResults: Record<string, unknown> = {};
  /** The vault secrets the policy names (`secrets.get`), read before the phase runs: `vault\u0000name` → value. */
  readonly secrets = new Map<string, string>();
  /** Why no secret could be read, when the host gives no vaults (`secrets.get` then answers 501 with it). */
  secretsMissing?: string;
  /** The account's secrets, for `secrets.get` with computed arguments (read once per request). */
  accountSecrets?: (vault: string, name: string) => string | undefined;
  readonly logs: PolicyLogEntry[] = [];
  /** on_event_stream_message: the message the phase sees and sse-find-replace changes. */
  eventMessage?: EventStreamMessage;
  /** response-body-find-replace: what to replace in the response body, in order, for the ingress. */
  readonly bodyReplacements: BodyReplacement[] = [];
  /** compress-response: the algorithms it allows (negotiated once the response is known). */
  compressionAllowed?: readonly string[];
  /** terminate-tls: how to terminate TLS. */
  tls?: TlsTermination;
  /** on_tcp_connect: the ingress's handshake, which terminate-tls runs (absent: the ingress terminates after the phase, or not at all). */
  handshake?: TlsHandshake;
  /** Told the upstream's outcome after the request phase (`failed`: no answer, or a 5xx); circuit breakers count it. */
  readonly onUpstreamOutcome: ((failed: boolean, now: Date) => void | Promise<void>)[] = [];
  readonly #memo = new Map<string, unknown>();

  constructor(
    readonly phase: Phase,
    readonly endpoint: EndpointFacts,
    /** The connection; terminate-tls adds its TLS session (`tls`) when it terminates. */
    public conn: ConnectionFacts,
    readonly now: Date,
    readonly request?: RequestState,
    readonly response?: ResponseState,
  ) {}

  /** `compute()` once until the request or response changes. */
  memo<T>(key: string, compute: () => T): T {
    if (!this.#memo.has(key)) this.#memo.set(key, compute());
    return this.#memo.get(key) as T;
  }

  /** Call after changing the request or response. */
  changed(): void {
    this.#memo.clear();
  }

  /** Records an action's result variables under `actions.ngrok.<name>`. */
  setActionResult(name: string, value: Record<string, unknown>): void {
    this.actionResults[name] = value;
  }

  /** The request body (null when longer than `maxBytes`, undefined when there is none); read once. */
  async body(maxBytes: number): Promise<Uint8Array | null | undefined> {
    const request = this.request;
    if (!request?.body) return undefined;
    if (!request.bodyRead) request.bodyRead = { bytes: (await request.body.read(maxBytes)) ?? null, at: this.now };
    const bytes = request.bodyRead.bytes;
    return bytes && bytes.byteLength > maxBytes ? null : bytes;
  }
}

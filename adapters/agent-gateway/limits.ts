/**
 * Bounds and timeouts of the agent gateway. A peer past a bound loses its own session (GOAWAY
 * naming the bound), never the process. docs/agent-protocol.md lists them.
 */

const KIB = 1024;

/** Per-stream flow-control window. Not negotiated by the protocol: the vendor's agent assumes 256 KiB. */
export const AGENT_STREAM_WINDOW_BYTES = 256 * KIB;
/** The longest frame body accepted (the agent never sends DATA beyond a window). */
export const AGENT_MAX_FRAME_BYTES = 256 * KIB;
/** Streams open at once on one session (the vendor's default); more are refused with RST. */
export const AGENT_MAX_STREAMS = 512;
/** The longest RPC message (Auth, Bind…) read from an agent. */
export const AGENT_MAX_MESSAGE_BYTES = 1024 * KIB;
/** Bytes left unread by an agent before its session is ended. */
export const AGENT_MAX_UNREAD_BYTES = 8 * 1024 * KIB;

/** From TCP accept to a successful Auth (TLS handshake included). */
export const AGENT_HANDSHAKE_TIMEOUT_MS = 10_000;
/** Between the gateway's heartbeats, and how long the agent has to answer one (the vendor's agent defaults). */
export const AGENT_HEARTBEAT_INTERVAL_MS = 10_000;
export const AGENT_HEARTBEAT_TOLERANCE_MS = 15_000;
/** How long an agent has to answer a Stop, Restart or Update. */
export const AGENT_COMMAND_TIMEOUT_MS = 30_000;
/** After a GOAWAY, how long the connection may take to close before it is cut. */
export const AGENT_CLOSE_GRACE_MS = 5_000;

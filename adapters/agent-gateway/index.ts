/**
 * The agent gateway: the vendor's agent (the `@ngrok/ngrok` SDK, the ngrok CLI, ngrok-go…)
 * connects here over TLS and speaks its own protocol (docs/agent-protocol.md). Sessions, binds
 * and commands go through an AgentSessionHandler; see ./session-handler.ts for the seam.
 */
export { hostPort } from '../addresses.ts';
export { startAgentGateway, type AgentGatewayStartOptions, type LiveContext, type RunningAgentGateway } from './burrow-gateway.ts';
export { createAgentGateway, type AgentGateway, type AgentGatewayAddress, type AgentGatewayOptions } from './gateway.ts';
export {
  AgentGatewayError,
  AgentRelayError,
  type AgentSession,
  type RoutableSession,
  type AgentSessionAuth,
  type AgentSessionHandler,
  type AgentTunnel,
  type AuthResult,
  type BindResult,
  type CommandReply,
  type ProxyOptions,
  type RemoteAddress,
  type SessionEndReason,
} from './session-handler.ts';
export type {
  AgentAuth,
  BindRequest,
  CommandKind,
  CommandSupport,
  EdgeType,
  EndpointBindRequest,
  HttpEndpointOptions,
  LabeledBindRequest,
  ProtocolVersion,
  TcpEndpointOptions,
  TlsEndpointOptions,
  UpdateArguments,
} from './protocol.ts';
export { EDGE_TYPES } from './protocol.ts';
export { REAL_TIMERS, type Timers } from '../gateway-connection/timers.ts';

/**
 * The SSH gateway: OpenSSH clients open endpoints with `ssh -R 0:localhost:8080 v2@host http`,
 * the vendor's SSH reverse tunnel (docs/ssh-gateway.md). Sessions and binds go through an
 * SshSessionHandler; see ./session-handler.ts for the seam.
 */
export { createSshGateway, keyFingerprint, type SshGateway, type SshGatewayAddress, type SshGatewayOptions } from './gateway.ts';
export * from './session-handler.ts';
export { COMMAND_SYNTAX_VERSION, type BasicAuthCredential, type RemoteForward, type SshBindRequest } from './command.ts';
export { startSshGateway, type RunningSshGateway, type SshGatewayStartOptions, type SshLiveContext } from './burrow-gateway.ts';
export { routableSession } from './routable.ts';

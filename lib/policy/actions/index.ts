import { basicAuth } from './basic-auth.ts';
import { requestBodyFindReplace, responseBodyFindReplace, sseFindReplace } from './body-find-replace.ts';
import { circuitBreaker } from './circuit-breaker.ts';
import { compressResponse } from './compress-response.ts';
import { forwardInternal } from './forward-internal.ts';
import { addHeaders, removeHeaders } from './headers.ts';
import { httpRequest } from './http-request.ts';
import { oauth, oidc, saml } from './identity.ts';
import { jwtValidation } from './jwt-validation.ts';
import { rateLimit } from './rate-limit.ts';
import { closeConnection, customResponse, deny, redirect, urlRewrite } from './responses.ts';
import { restrictIps } from './restrict-ips.ts';
import { terminateTls } from './terminate-tls.ts';
import type { ActionDefinition } from './types.ts';
import { UNSUPPORTED_ACTIONS } from './unsupported.ts';
import { userAgentFilter } from './user-agent-filter.ts';
import { log, setVars } from './variables.ts';
import { verifyWebhook } from './verify-webhook.ts';

const byType = (definitions: readonly ActionDefinition<any>[]) => Object.fromEntries(definitions.map((definition) => [definition.type, definition]));

/** Every action type a traffic policy document may use (the vendor's list, lib/conventions/traffic-policy.ts ACTION_PHASES). */
export const DOCUMENT_ACTIONS: Readonly<Record<string, ActionDefinition<any>>> = byType([
  addHeaders,
  basicAuth,
  circuitBreaker,
  closeConnection,
  compressResponse,
  customResponse,
  deny,
  forwardInternal,
  httpRequest,
  jwtValidation,
  log,
  oauth,
  oidc,
  { ...oidc, type: 'openid-connect' },
  rateLimit,
  redirect,
  removeHeaders,
  requestBodyFindReplace,
  responseBodyFindReplace,
  restrictIps,
  setVars,
  sseFindReplace,
  terminateTls,
  urlRewrite,
  verifyWebhook,
  ...UNSUPPORTED_ACTIONS,
]);

/** Behaviours of edge modules that have no traffic policy action; only module translations produce them. */
export const MODULE_ACTIONS: Readonly<Record<string, ActionDefinition<any>>> = byType([userAgentFilter, saml]);


import { abuseReportsFamily } from './abuse-reports/index.ts';
import { aiGatewayApiKeysFamily } from './ai-gateway-api-keys/index.ts';
import { agentsFamily } from './agents/index.ts';
import { apiKeysFamily } from './api-keys/index.ts';
import { applicationsFamily } from './applications/index.ts';
import { backendsFamily } from './backends/index.ts';
import { botUsersFamily } from './bot-users/index.ts';
import { certificateAuthoritiesFamily } from './certificate-authorities/index.ts';
import { credentialsFamily } from './credentials/index.ts';
import { domainsFamily } from './domains/index.ts';
import { edgesFamily } from './edges/index.ts';
import { endpointsFamily } from './endpoints/index.ts';
import { eventsFamily } from './events/index.ts';
import { ipPoliciesFamily } from './ip-policies/index.ts';
import { kubernetesOperatorsFamily } from './kubernetes-operators/index.ts';
import { reservedAddrsFamily } from './reserved-addrs/index.ts';
import { serviceUsersFamily } from './service-users/index.ts';
import { sshFamily } from './ssh/index.ts';
import { tlsCertificatesFamily } from './tls-certificates/index.ts';
import { vaultsFamily } from './vaults/index.ts';

/**
 * Every family Burrow serves, in routing order. Adding a family = its folder under lib/families/
 * + one line here; the router, the OpenAPI document, the typed in-process client, the control plane
 * and the sweeps pick it up from this list.
 */
export const FAMILIES = [
  apiKeysFamily,
  credentialsFamily,
  sshFamily,
  ipPoliciesFamily,
  eventsFamily,
  agentsFamily,
  endpointsFamily,
  domainsFamily,
  backendsFamily,
  certificateAuthoritiesFamily,
  edgesFamily,
  botUsersFamily,
  serviceUsersFamily,
  applicationsFamily,
  abuseReportsFamily,
  tlsCertificatesFamily,
  reservedAddrsFamily,
  vaultsFamily,
  aiGatewayApiKeysFamily,
  kubernetesOperatorsFamily,
] as const;

type UnionToIntersection<U> = (U extends unknown ? (k: U) => void : never) extends (k: infer I) => void ? I : never;

/** Every resource kind of every family, by name: the typed view the in-process client is built on. */
export type Kinds = UnionToIntersection<(typeof FAMILIES)[number]['kinds']>;

/** Every resource kind Burrow serves, by its name (the operation-id prefix), derived from FAMILIES. */
export const REGISTRY: Kinds = Object.assign({}, ...FAMILIES.map((family) => family.kinds));

/** The name of a resource kind: `api_keys`, `credentials`, … */
export type ResourceName = keyof Kinds & string;

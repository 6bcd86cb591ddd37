import { defineFamily } from '../../engine/family.ts';
import { DOMAINS_ERRORS } from './errors.ts';
import { AGENT_INGRESS_CONTROL_OPERATIONS, agentIngresses } from './agent-ingresses.ts';
import { RESERVED_DOMAIN_CONTROL_OPERATIONS, reservedDomains } from './reserved-domains.ts';

/** Domains an account holds: agent ingresses and reserved domains, with their certificate management. */
export const domainsFamily = defineFamily({
  name: 'domains',
  errors: DOMAINS_ERRORS,
  kinds: { agent_ingresses: agentIngresses, reserved_domains: reservedDomains },
  controlOperations: [...AGENT_INGRESS_CONTROL_OPERATIONS, ...RESERVED_DOMAIN_CONTROL_OPERATIONS],
  examples: {
    agent_ingresses: { body: (seed) => ({ domain: `${seed.unique('ingress')}.example.com` }) },
    reserved_domains: { body: (seed) => ({ domain: `${seed.unique('reserved')}.example.net` }) },
  },
});

export { findCoveringDomain, findReservedDomain, type CoveringDomain, type DomainCertificate } from './reserved-domains.ts';

export { DOMAINS_ERRORS } from './errors.ts';

import { onFirstUse } from '../conventions/on-first-use.ts';
import {
  numbered,
  parseTrafficPolicy,
  TrafficPolicyProblem,
  type LabeledRules,
  type TrafficPolicyChecker,
  type TrafficPolicyHolder,
  type TrafficPolicyIssue,
  type TrafficPolicyPhase,
} from '../conventions/traffic-policy.ts';
import type { Phase } from '../traffic/decisions.ts';
import { createPhaseLanguages } from './languages.ts';
import { compilePolicy, type PolicyRules } from './program.ts';
import { legacyAgentRules } from './sources.ts';

/**
 * The write-time check of traffic policies (the contract: TrafficPolicyChecker in
 * lib/conventions/traffic-policy.ts). It compiles the rules exactly as the engine will — each
 * phase's expressions against that phase's variables and the functions Burrow knows, each
 * action's configuration with the action's own compile step — so what it stores is what runs;
 * then it applies the vendor's save-time rules:
 *
 * - restrict-ips `ip_policies` must name IP policies of the account (ERR_NGROK_2216, "Invalid IP
 *   Policy Reference(s)");
 * - a cloud endpoint's policy must always end in a terminating action (ERR_NGROK_2235, "not
 *   guaranteed to handle traffic"): the vendor documents that "All Cloud Endpoint Traffic Policies
 *   must end with a terminating action" and lists close-connection, custom-response, deny and
 *   forward-internal (traffic-policy/how-it-works.mdx). Burrow reads "always" without evaluating
 *   anything: some rule without expressions, in a phase every request (HTTP) or connection meets,
 *   holds one of those actions.
 */

/** The actions the vendor lists as terminating (traffic-policy/concepts/actions.mdx). */
const TERMINATING_ACTIONS: ReadonlySet<string> = new Set(['close-connection', 'custom-response', 'deny', 'forward-internal']);

/** `on_http_request[0].actions[1]` and `config.x: …` → `on_http_request[0].actions[1].config.x: …`. */
const joined = (at: string, message: string) => (message.startsWith('config') ? `${at}.${message}` : `${at}: ${message}`);

/** Whether some rule of `phase` always runs (no expressions) and holds a terminating action. */
const alwaysAnswers = (rules: PolicyRules, phase: Phase) =>
  (rules[phase] ?? []).some((rule) => (rule.expressions ?? []).length === 0 && rule.actions.some((action) => TERMINATING_ACTIONS.has(action.type)));

/** The phases a cloud endpoint's traffic always meets, one of which must answer: HTTP traffic may be answered per request or per connection. */
const answeringPhases = (phases: readonly TrafficPolicyPhase[]): Phase[] => (phases.includes('on_http_request') ? ['on_tcp_connect', 'on_http_request'] : ['on_tcp_connect']);

export function createTrafficPolicyChecker(): TrafficPolicyChecker {
  // Three CEL environments with every function registered: built on the first check, not at start.
  const languages = onFirstUse(() => createPhaseLanguages(Math.random));

  async function check(rules: PolicyRules, holder: TrafficPolicyHolder, label: (phase: Phase) => string): Promise<TrafficPolicyIssue | undefined> {
    const relabel = (at: string) => at.replace(/^\w+/, (phase) => label(phase as Phase));
    const { issues } = compilePolicy(languages(), [{ source: 'traffic_policy', rules }]);
    const first = issues[0];
    if (first) return numbered(joined(relabel(first.at), first.message), first.code);
    for (const [phase, list] of Object.entries(rules) as [Phase, PolicyRules[Phase]][]) {
      for (const [r, rule] of (list ?? []).entries()) {
        for (const [a, action] of rule.actions.entries()) {
          if (action.type !== 'restrict-ips') continue;
          const ids = ((action.config as { ip_policies?: readonly string[] } | null | undefined)?.ip_policies ?? []);
          for (const [i, id] of ids.entries()) {
            if (!(await holder.ipPolicyExists(id))) {
              return { message: `${label(phase)}[${r}].actions[${a}].config.ip_policies[${i}]: invalid IP policy reference: '${id}' is no IP policy of this account`, code: 'POLICY_IP_POLICY_UNKNOWN' };
            }
          }
        }
      }
    }
    if (holder.cloudEndpoint && !answeringPhases(holder.phases).some((phase) => alwaysAnswers(rules, phase))) {
      const phases = answeringPhases(holder.phases).join(' or ');
      return {
        message: `the traffic policy is not guaranteed to handle traffic: a cloud endpoint's policy must end in a terminating action (${[...TERMINATING_ACTIONS].join(', ')}) in a rule without expressions in ${phases}`,
        code: 'POLICY_NOT_TERMINATING',
      };
    }
    return undefined;
  }

  async function document(text: string, holder: TrafficPolicyHolder): Promise<TrafficPolicyIssue | undefined> {
    let rules: PolicyRules;
    try {
      rules = parseTrafficPolicy(text, { phases: holder.phases });
    } catch (error) {
      if (!(error instanceof TrafficPolicyProblem)) throw error;
      return { message: error.message, ...(error.code ? { code: error.code } : {}) };
    }
    return check(rules, holder, (phase) => phase);
  }

  return {
    document,
    rules: ({ rules, labels }: LabeledRules, holder) => check(rules, holder, (phase) => labels[phase] ?? phase),
    agent(text, holder) {
      const legacy = legacyAgentRules(text, !holder.phases.includes('on_http_request'));
      if (!legacy) return document(text, holder);
      return check(legacy, holder, (phase) => (phase === 'on_http_response' ? 'Outbound' : 'Inbound'));
    },
  };
}

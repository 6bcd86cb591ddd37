import type { ResourceKind } from '../../engine/context.ts';
import { TRAFFIC_EVENT_TYPES } from '../../traffic/events.ts';

/**
 * The event catalogue: `<object>_<created|updated|deleted>.v0` for every registered kind that
 * names an event object (api_key, tunnel_credential, ip_policy, …), plus the agent session types
 * the simulator and the agent gateway emit and the traffic types the ingress's traffic journal
 * emits (lib/journal/traffic-journal.ts). Derived from the registry, so a new kind's events appear without a list to
 * keep in step.
 */

export const AGENT_SESSION_EVENTS = ['agent_session_start.v0', 'agent_session_stop.v0'] as const;
const ACTIONS = ['created', 'updated', 'deleted'] as const;

/** Every event type Burrow emits with these kinds, sorted. */
export function eventCatalogue(definitions: readonly Pick<ResourceKind, 'event'>[]): string[] {
  const objects = [...new Set(definitions.flatMap((def) => (def.event ? [def.event] : [])))];
  return [...objects.flatMap((object) => ACTIONS.map((action) => `${object}_${action}.v0`)), ...AGENT_SESSION_EVENTS, ...Object.values(TRAFFIC_EVENT_TYPES)].sort();
}

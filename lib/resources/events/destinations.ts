import * as v from 'valibot';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { coded, description, metadata, zeroIsUnset } from '../../conventions/fields.ts';
import { defineResource, type BaseRecord } from '../../resource.ts';
import { EVENT_DESTINATION_KIND } from './kinds.ts';
import { clearOutbox } from './outbox.ts';

/**
 * Event destinations (/event_destinations): where the events of subscriptions go. A destination
 * has a `format` (required; JSON is the only one, any case, answered as `json`) and a `target`
 * with exactly one member set (5100):
 *
 * - `delivery` {auth, delivery_stream_ref}, `stream` {auth, stream_ref}, `logs` {auth, log_group_ref}
 * - `monitoring` {api_key, monitoringtags, service, monitoringsite}, every field optional
 * - `storage` {auth, bucket_ref}: the object-storage member that the spec names without a shape,
 *   designed like its siblings (an auth and the reference of the bucket the events are written to)
 *
 * `auth` has exactly one of `role` {role_ref} or `creds` {cloud_access_key_id,
 * cloud_secret_access_key} (240). Secrets (`cloud_secret_access_key`, the monitoring `api_key`)
 * are accepted and stored but always answered as null, also in events. The kind of target cannot
 * change on update (5108): the vendor refuses it too, and a new destination is the way. A
 * destination that a subscription uses is not deleted (5112). Burrow delivers into
 * per-destination outboxes (outbox.ts), never to a real cloud service.
 */

const TARGET_KINDS = ['delivery', 'stream', 'logs', 'monitoring', 'storage'] as const;
type TargetKind = (typeof TARGET_KINDS)[number];

const ref = v.pipe(v.string(), v.minLength(1, 'must not be empty'));

const CloudAuth = v.pipe(
  v.strictObject({
    role: v.optional(v.nullable(v.strictObject({ role_ref: ref }))),
    creds: v.optional(v.nullable(v.strictObject({ cloud_access_key_id: ref, cloud_secret_access_key: ref }))),
  }),
  v.check((auth) => (auth.role ? 1 : 0) + (auth.creds ? 1 : 0) === 1, coded('EVENT_AUTH_INVALID', 'exactly one of role or creds must be set')),
);

const withAuth = <K extends string>(refField: K) => v.nullable(v.strictObject({ auth: CloudAuth, [refField]: ref } as { auth: typeof CloudAuth } & Record<K, typeof ref>));

const Target = v.pipe(
  v.strictObject({
    delivery: v.optional(withAuth('delivery_stream_ref')),
    stream: v.optional(withAuth('stream_ref')),
    logs: v.optional(withAuth('log_group_ref')),
    storage: v.optional(withAuth('bucket_ref')),
    monitoring: v.optional(
      v.nullable(
        v.strictObject({
          api_key: v.optional(v.string()),
          monitoringtags: v.optional(v.string()),
          service: v.optional(v.string()),
          monitoringsite: v.optional(v.string()),
        }),
      ),
    ),
  }),
  v.check(
    (target) => TARGET_KINDS.filter((kind) => target[kind]).length === 1,
    (issue) => {
      const set = TARGET_KINDS.filter((kind) => (issue.input as Record<string, unknown>)[kind]);
      return coded('EVENT_TARGET_INVALID', `exactly one of ${TARGET_KINDS.join(', ')} must be set (got ${set.length === 0 ? 'none' : set.join(', ')})`);
    },
  ),
);

const formatMessage = (issue: { input: unknown }) => coded('EVENT_FORMAT_INVALID', `the only supported format is json (got ${JSON.stringify(issue.input) ?? 'nothing'})`);
const format = v.pipe(
  v.string(formatMessage),
  v.check((value) => value.toLowerCase() === 'json', formatMessage),
);

// A missing key is reported by the object schema itself, so `format`'s own code (235) needs this check.
const DestinationCreate = v.pipe(
  v.strictObject({ description: v.optional(description), metadata: v.optional(metadata), format: zeroIsUnset(format), target: Target }),
  v.forward(v.check((input) => input.format !== undefined, formatMessage({ input: undefined })), ['format']),
);
const DestinationUpdate = v.strictObject({ description: v.optional(description), metadata: v.optional(metadata), format: zeroIsUnset(format), target: v.optional(Target) });

type TargetInput = v.InferOutput<typeof Target>;

export interface EventDestinationRecord extends BaseRecord {
  readonly format: string;
  readonly target_kind: TargetKind;
  readonly target: Readonly<Record<string, unknown>>;
}

function targetKind(target: TargetInput): TargetKind {
  return TARGET_KINDS.find((kind) => target[kind])!;
}

/** The target as answered: every member present, unused ones null, every field present, secrets null. */
function targetResponse(record: EventDestinationRecord): Record<string, unknown> {
  const member = record.target as Record<string, any>;
  const answered =
    record.target_kind === 'monitoring'
      ? { api_key: null, monitoringtags: member.monitoringtags ?? '', service: member.service ?? '', monitoringsite: member.monitoringsite ?? '' }
      : {
          ...member,
          auth: {
            role: member.auth.role ? { role_ref: member.auth.role.role_ref } : null,
            creds: member.auth.creds ? { cloud_access_key_id: member.auth.creds.cloud_access_key_id, cloud_secret_access_key: null } : null,
          },
        };
  return Object.fromEntries(TARGET_KINDS.map((kind) => [kind, kind === record.target_kind ? answered : null]));
}

export const eventDestinations = defineResource<EventDestinationRecord, v.InferOutput<typeof DestinationCreate>, v.InferOutput<typeof DestinationUpdate>>({
  name: 'event_destinations',
  label: 'event destination',
  kind: EVENT_DESTINATION_KIND,
  prefix: 'ed',
  path: '/event_destinations',
  listKey: 'event_destinations',
  event: 'event_destination',
  notFoundError: ERRORS.EVENT_DESTINATION_NOT_FOUND,
  inUseError: ERRORS.EVENT_DESTINATION_IN_USE,
  createSchema: DestinationCreate,
  updateSchema: DestinationUpdate,
  create(_ctx, input, base) {
    const kind = targetKind(input.target);
    return { ...base, format: 'json', target_kind: kind, target: input.target[kind] as Record<string, unknown> };
  },
  // A sent target replaces the member as a whole (secrets included), within the same kind.
  update(_ctx, record, patch) {
    if (!patch.target) return record;
    const kind = targetKind(patch.target);
    if (kind !== record.target_kind) {
      throw new ApiError(ERRORS.EVENT_TARGET_IMMUTABLE, `target: a ${record.target_kind} destination cannot become a ${kind} destination; create a new destination instead`);
    }
    return { ...record, target: patch.target[kind] as Record<string, unknown> };
  },
  toResponse: (_ctx, record, base) => ({ ...base, format: record.format, target: targetResponse(record) }),
  async beforeDelete(ctx, record) {
    await clearOutbox(ctx.tx, ctx.account, record.id);
  },
});

import * as v from 'valibot';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { coded, description, metadata, zeroIsUnset, type Schema } from '../../conventions/fields.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { clearOutbox } from './outbox.ts';
import { EVENTS_ERRORS } from './errors.ts';

/**
 * Event destinations (/event_destinations): where the events of subscriptions go. A destination
 * has a `format` (required; JSON is the only one, any case, answered as `json`) and a `target`
 * with exactly one member set (5100):
 *
 * - `delivery` {auth, delivery_stream_ref}, `stream` {auth, stream_ref}, `logs` {auth, log_group_ref}
 * - `monitoring` {api_key, monitoringtags, service, monitoringsite}, every field optional
 * - `storage` {auth, bucket_ref}: the object-storage member that the spec names without a shape,
 *   designed like its siblings (an auth and the reference of the bucket the events are written to)
 * - `logs_ingestion` {tenant_id, client_id, client_secret, logs_ingestion_uri,
 *   data_collection_rule_id, data_collection_stream_name}: a cloud log-ingestion API (the vendor's
 *   `azure_logs_ingestion`, newer than the spec), every field required and non-empty, the URI an
 *   absolute https URL
 *
 * `auth` has exactly one of `role` {role_ref} or `creds` {cloud_access_key_id,
 * cloud_secret_access_key} (240). Secrets (`cloud_secret_access_key`, the monitoring `api_key`,
 * the log-ingestion `client_secret`) are accepted and stored but always answered as null, also in events. The kind of target cannot
 * change on update (5108): the vendor refuses it too, and a new destination is the way. A
 * destination that a subscription uses is not deleted (5112). Burrow delivers into
 * per-destination outboxes (outbox.ts), never to a real cloud service.
 *
 * The vendor's own member names are accepted too (VENDOR_NAMES: `firehose` {auth,
 * delivery_stream_arn}, `kinesis` {auth, stream_arn}, `cloudwatch_logs` {auth, log_group_arn},
 * `datadog` {api_key, ddtags, service, ddsite}, `azure_logs_ingestion` {the fields above}; auth `role`
 * {role_arn}, `creds` {aws_access_key_id, aws_secret_access_key}), so code written for the vendor service works unchanged. Records are
 * stored in the neutral names plus the `vocabulary` the destination was created in, and every
 * answer (reads, lists, events, sinks) uses that vocabulary; an update may use either.
 */

const TARGET_KINDS = ['delivery', 'stream', 'logs', 'monitoring', 'storage', 'logs_ingestion'] as const;
type TargetKind = (typeof TARGET_KINDS)[number];

/** The vocabulary a destination answers in: the spec's neutral names or the vendor's. */
export type TargetVocabulary = 'neutral' | 'vendor';

/** Neutral name → the vendor's name, for target members and the fields inside them. */
const VENDOR_NAMES = {
  members: { delivery: 'firehose', stream: 'kinesis', logs: 'cloudwatch_logs', monitoring: 'datadog', logs_ingestion: 'azure_logs_ingestion' } as Partial<Record<TargetKind, string>>,
  fields: {
    delivery_stream_ref: 'delivery_stream_arn',
    stream_ref: 'stream_arn',
    log_group_ref: 'log_group_arn',
    monitoringtags: 'ddtags',
    monitoringsite: 'ddsite',
    role_ref: 'role_arn',
    cloud_access_key_id: 'aws_access_key_id',
    cloud_secret_access_key: 'aws_secret_access_key',
  } as Record<string, string>,
};
const VENDOR_KINDS = Object.fromEntries(Object.entries(VENDOR_NAMES.members).map(([neutral, vendor]) => [vendor, neutral as TargetKind]));
const NEUTRAL_FIELDS = Object.fromEntries(Object.entries(VENDOR_NAMES.fields).map(([neutral, vendor]) => [vendor, neutral]));

/** `a kinesis`, `an azure_logs_ingestion`. */
const withArticle = (name: string) => `${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name}`;

/** A field name in `vocabulary`. */
const named = (field: string, vocabulary: TargetVocabulary) => (vocabulary === 'vendor' ? (VENDOR_NAMES.fields[field] ?? field) : field);

/** Renames the keys of a plain JSON tree (`rename` gives the new name of a key, or the key itself). */
function renameKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => renameKeys(item, rename));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [rename(key), renameKeys(inner, rename)]));
}

const ref = v.pipe(v.string(), v.minLength(1, 'must not be empty'));
const httpsUrl = v.pipe(
  v.string(),
  v.check((text) => URL.canParse(text) && new URL(text).protocol === 'https:', (issue) => `must be an absolute https URL (got ${JSON.stringify(issue.input)})`),
);

const strictNamed = (vocabulary: TargetVocabulary, entries: Record<string, Schema>) =>
  v.strictObject(Object.fromEntries(Object.entries(entries).map(([field, schema]) => [named(field, vocabulary), schema])));

function memberSchemas(vocabulary: TargetVocabulary): Record<string, Schema> {
  const auth = v.pipe(
    v.strictObject({
      role: v.optional(v.nullable(strictNamed(vocabulary, { role_ref: ref }))),
      creds: v.optional(v.nullable(strictNamed(vocabulary, { cloud_access_key_id: ref, cloud_secret_access_key: ref }))),
    }),
    v.check((given) => (given.role ? 1 : 0) + (given.creds ? 1 : 0) === 1, coded(EVENTS_ERRORS.EVENT_AUTH_INVALID, 'exactly one of role or creds must be set')),
  );
  const withAuth = (refField: string) => v.nullable(strictNamed(vocabulary, { auth, [refField]: ref }));
  const members: Record<TargetKind, Schema> = {
    delivery: withAuth('delivery_stream_ref'),
    stream: withAuth('stream_ref'),
    logs: withAuth('log_group_ref'),
    storage: withAuth('bucket_ref'),
    monitoring: v.nullable(
      strictNamed(vocabulary, { api_key: v.optional(v.string()), monitoringtags: v.optional(v.string()), service: v.optional(v.string()), monitoringsite: v.optional(v.string()) }),
    ),
    logs_ingestion: v.nullable(
      v.strictObject({ tenant_id: ref, client_id: ref, client_secret: ref, logs_ingestion_uri: httpsUrl, data_collection_rule_id: ref, data_collection_stream_name: ref }),
    ),
  };
  if (vocabulary === 'neutral') return Object.fromEntries(Object.entries(members).map(([kind, schema]) => [kind, v.optional(schema)]));
  return Object.fromEntries(Object.entries(VENDOR_NAMES.members).map(([kind, vendor]) => [vendor, v.optional(members[kind as TargetKind])]));
}

const MEMBER_NAMES = [...TARGET_KINDS, ...Object.values(VENDOR_NAMES.members)];

const Target = v.pipe(
  v.strictObject({ ...memberSchemas('neutral'), ...memberSchemas('vendor') }),
  v.check(
    (target) => MEMBER_NAMES.filter((name) => (target as Record<string, unknown>)[name]).length === 1,
    (issue) => {
      const set = MEMBER_NAMES.filter((name) => (issue.input as Record<string, unknown>)[name]);
      return coded(
        EVENTS_ERRORS.EVENT_TARGET_INVALID,
        `exactly one of ${TARGET_KINDS.join(', ')} (or the vendor's ${Object.values(VENDOR_NAMES.members).join(', ')}) must be set (got ${set.length === 0 ? 'none' : set.join(', ')})`,
      );
    },
  ),
);

const formatMessage = (issue: { input: unknown }) => coded(EVENTS_ERRORS.EVENT_FORMAT_INVALID, `the only supported format is json (got ${JSON.stringify(issue.input) ?? 'nothing'})`);
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

type TargetInput = Readonly<Record<string, unknown>>;

export interface EventDestinationRecord extends BaseRecord {
  readonly format: string;
  readonly target_kind: TargetKind;
  /** The set member in neutral names. */
  readonly target: Readonly<Record<string, unknown>>;
  /** The names the destination was created with; absent in records from before vendor names. */
  readonly vocabulary?: TargetVocabulary;
}

/** The one set member of a validated target: its kind, its fields in neutral names, and the vocabulary it came in. */
function readTarget(target: TargetInput): { kind: TargetKind; member: Record<string, unknown>; vocabulary: TargetVocabulary } {
  const name = MEMBER_NAMES.find((candidate) => target[candidate])!;
  const vendorKind = VENDOR_KINDS[name];
  if (vendorKind === undefined) return { kind: name as TargetKind, member: target[name] as Record<string, unknown>, vocabulary: 'neutral' };
  return { kind: vendorKind, member: renameKeys(target[name], (key) => NEUTRAL_FIELDS[key] ?? key) as Record<string, unknown>, vocabulary: 'vendor' };
}

/** The set member as answered, in neutral names: every field present, secrets null. */
function memberResponse(kind: TargetKind, member: Record<string, any>): Record<string, unknown> {
  if (kind === 'monitoring') return { api_key: null, monitoringtags: member.monitoringtags ?? '', service: member.service ?? '', monitoringsite: member.monitoringsite ?? '' };
  if (kind === 'logs_ingestion') {
    const { tenant_id, client_id, logs_ingestion_uri, data_collection_rule_id, data_collection_stream_name } = member;
    return { tenant_id, client_id, client_secret: null, logs_ingestion_uri, data_collection_rule_id, data_collection_stream_name };
  }
  return {
    ...member,
    auth: {
      role: member.auth.role ? { role_ref: member.auth.role.role_ref } : null,
      creds: member.auth.creds ? { cloud_access_key_id: member.auth.creds.cloud_access_key_id, cloud_secret_access_key: null } : null,
    },
  };
}

/**
 * The target as answered, in the destination's vocabulary: every member present, unused ones
 * null, every field present, secrets null.
 */
function targetResponse(record: EventDestinationRecord): Record<string, unknown> {
  const answered = memberResponse(record.target_kind, record.target as Record<string, any>);
  if (record.vocabulary !== 'vendor') return Object.fromEntries(TARGET_KINDS.map((kind) => [kind, kind === record.target_kind ? answered : null]));
  const vendorAnswer = renameKeys(answered, (key) => VENDOR_NAMES.fields[key] ?? key);
  return Object.fromEntries(Object.entries(VENDOR_NAMES.members).map(([kind, vendor]) => [vendor, kind === record.target_kind ? vendorAnswer : null]));
}

export const eventDestinations = defineResource<EventDestinationRecord, typeof DestinationCreate, typeof DestinationUpdate>({
  name: 'event_destinations',
  label: 'event destination',
  prefix: 'ed',
  filterable: true,
  event: 'event_destination',
  notFoundError: EVENTS_ERRORS.EVENT_DESTINATION_NOT_FOUND,
  inUseError: EVENTS_ERRORS.EVENT_DESTINATION_IN_USE,
  createSchema: DestinationCreate,
  storedFields: {
    format: v.literal('json'),
    target_kind: v.picklist(TARGET_KINDS),
    target: v.record(v.string(), v.unknown()),
    vocabulary: v.optional(v.picklist(['neutral', 'vendor'])),
  },
  updateSchema: DestinationUpdate,
  create(_ctx, input, base) {
    const { kind, member, vocabulary } = readTarget(input.target);
    return { ...base, format: 'json', target_kind: kind, target: member, vocabulary };
  },
  // A sent target replaces the member as a whole (secrets included), within the same kind.
  update(_ctx, record, patch) {
    if (!patch.target) return record;
    const { kind, member } = readTarget(patch.target);
    if (kind !== record.target_kind) {
      const [was, becomes] = record.vocabulary === 'vendor' ? [VENDOR_NAMES.members[record.target_kind], VENDOR_NAMES.members[kind] ?? kind] : [record.target_kind, kind];
      throw new ApiError(EVENTS_ERRORS.EVENT_TARGET_IMMUTABLE, `target: ${withArticle(was!)} destination cannot become ${withArticle(becomes)} destination; create a new destination instead`);
    }
    return { ...record, target: member };
  },
  toResponse: (_ctx, record, base) => ({ ...base, format: record.format, target: targetResponse(record) }),
  async beforeDelete(ctx, record) {
    await clearOutbox(ctx.tx, ctx.account, record.id);
  },
});

import * as v from 'valibot';
import { operatorIn, type ControlOperationSpec } from '../../engine/context.ts';
import { fail } from '../../conventions/errors.ts';
import { NO_FIELDS, maxBytes, metadata, parseInput } from '../../conventions/fields.ts';
import { defineResource, getRecord, respond, scopeOf, type BaseRecord } from '../../engine/resource.ts';

/**
 * Abuse reports (POST /abuse_reports, GET /abuse_reports/{id}; no list, no update, no delete, as
 * the vendor's). A report names URLs; Burrow parses each URL's hostname, and every hostname is
 * reviewed:
 *
 * - a test decides a hostname (`BANNED`, `UNBANNED` or `IGNORE`) through the control plane's
 *   `POST /_burrow/accounts/{account_id}/abuse_reports/{id}/hostnames`;
 * - a hostname nobody decided is `PENDING` until the review window (REVIEW_SECONDS of the instance
 *   clock) has passed, then `IGNORE`: no traffic flows through Burrow, so there is nothing to ban.
 *
 * The report's `status` follows its hostnames: `PENDING` while all are pending, `PROCESSED` when
 * none is, `PARTIALLY_PROCESSED` in between. The vendor limits reports to authorised accounts (221);
 * Burrow lets every account file them.
 */

/** How long a hostname nobody decided stays `PENDING` (one hour of the instance clock). */
export const REVIEW_SECONDS = 60 * 60;

/** What the review decided about a hostname. */
export const HOSTNAME_DECISIONS = ['BANNED', 'UNBANNED', 'IGNORE'] as const;
type Decision = (typeof HOSTNAME_DECISIONS)[number];

export interface AbuseReportRecord extends BaseRecord {
  readonly urls: readonly string[];
  readonly hostnames: readonly string[];
  /** Decisions by hostname; hostnames absent here are pending until the window ends. */
  readonly decisions: Readonly<Record<string, Decision>>;
}

const MAX_URLS = 100;

const reportedUrl = v.pipe(
  v.string(),
  maxBytes(2048),
  v.check((value) => URL.canParse(value) && new URL(value).hostname !== '', (issue) => `must be an absolute URL with a hostname, such as https://bad.example.com/page (got ${JSON.stringify(issue.input)})`),
);

const AbuseReportCreate = v.strictObject({
  urls: v.pipe(v.array(reportedUrl), v.minLength(1, 'must list at least one URL'), v.maxLength(MAX_URLS, `must list at most ${MAX_URLS} URLs`)),
  metadata: v.optional(metadata),
});

/** The distinct hostnames of the reported URLs, in the order they first appear. */
function hostnamesOf(urls: readonly string[]): string[] {
  return [...new Set(urls.map((url) => new URL(url).hostname))];
}

function hostnameStatus(record: AbuseReportRecord, hostname: string, now: Date): string {
  const decided = record.decisions[hostname];
  if (decided) return decided;
  return now.getTime() >= new Date(record.created_at).getTime() + REVIEW_SECONDS * 1000 ? 'IGNORE' : 'PENDING';
}

export const abuseReports = defineResource<AbuseReportRecord, typeof AbuseReportCreate, typeof NO_FIELDS>({
  name: 'abuse_reports',
  label: 'abuse report',
  prefix: 'abrp',
  operations: ['create', 'get'],
  createSchema: AbuseReportCreate,
  updateSchema: NO_FIELDS,
  storedFields: { hostnames: v.array(v.string()), decisions: v.record(v.string(), v.unknown()) },
  create: (_ctx, input, base) => ({ ...base, urls: [...input.urls], hostnames: hostnamesOf(input.urls), decisions: {} }),
  toResponse(ctx, record, base) {
    const now = ctx.clock.now();
    const hostnames = record.hostnames.map((hostname) => ({ hostname, status: hostnameStatus(record, hostname, now) }));
    const pending = hostnames.filter((h) => h.status === 'PENDING').length;
    return {
      id: base.id,
      uri: base.uri,
      created_at: base.created_at,
      urls: [...record.urls],
      metadata: base.metadata,
      status: pending === hostnames.length ? 'PENDING' : pending === 0 ? 'PROCESSED' : 'PARTIALLY_PROCESSED',
      hostnames,
    };
  },
});

const DecisionBody = v.strictObject({
  hostnames: v.record(v.string(), v.picklist(HOSTNAME_DECISIONS, `must be one of ${HOSTNAME_DECISIONS.join(', ')}`)),
});

/** Control plane: the review decides what happens to reported hostnames. */
export const ABUSE_REPORT_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  {
    id: 'control.abuse_reports.hostnames',
    route: 'POST /accounts/:account_id/abuse_reports/:id/hostnames',
    body: DecisionBody,
    summary: 'Decide reported hostnames of an abuse report ({hostnames: {"<hostname>": "BANNED" | "UNBANNED" | "IGNORE"}}); answers the report',
    async run(instance, input, meta) {
      const account = input.params.account_id!;
      const body = parseInput(DecisionBody, input.body ?? {});
      return instance.perform(
        operatorIn(account),
        async (ctx) => {
          const record = await getRecord(ctx, abuseReports, input.params.id!);
          for (const hostname of Object.keys(body.hostnames)) {
            if (!record.hostnames.includes(hostname)) fail('INVALID_FIELD', `hostnames.${hostname}: not a hostname of abuse report '${record.id}' (its hostnames: ${record.hostnames.join(', ')})`);
          }
          const next: AbuseReportRecord = { ...record, decisions: { ...record.decisions, ...body.hostnames } };
          await ctx.tx.put(scopeOf(ctx, abuseReports.kind), next);
          return respond(ctx, abuseReports, next);
        },
        instance.baseUrl ?? meta.baseUrl,
      );
    },
  },
];

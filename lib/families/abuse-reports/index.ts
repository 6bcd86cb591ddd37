import { defineFamily } from '../../engine/family.ts';
import { ABUSE_REPORT_CONTROL_OPERATIONS, abuseReports } from './abuse-reports.ts';

/** Abuse reports about URLs, reviewed through the control plane. */
export const abuseReportsFamily = defineFamily({
  name: 'abuse-reports',
  kinds: { abuse_reports: abuseReports },
  controlOperations: ABUSE_REPORT_CONTROL_OPERATIONS,
  examples: { abuse_reports: { body: () => ({ urls: ['https://bad.example.com'] }) } },
});

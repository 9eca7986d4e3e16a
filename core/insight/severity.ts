/**
 * The order of insight severities (spec 01 Insight.severity: low, medium, high, critical), highest first when sorted by
 * `SEVERITY_RANK[b] - SEVERITY_RANK[a]`. A module without imports so that engines and bundles can share it freely.
 */
export const SEVERITY_RANK: Readonly<Record<string, number>> = { critical: 4, high: 3, medium: 2, low: 1 };

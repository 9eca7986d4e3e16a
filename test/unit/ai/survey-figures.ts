/**
 * Test-only: recompute the figures of a quantitative survey insight (core/ai/synthesis/survey.ts) from the survey
 * file parsed here with papaparse, independently of the engine, and check its quotes. Shared by the unit test
 * (test/unit/ai/synthesis-survey.test.ts) and the API test (test/http/synthesis-survey.test.ts).
 */
import { readFileSync } from "node:fs";
import Papa from "papaparse";
import { expect } from "vitest";

/** What is checked of an insight: the fields the API returns too. */
export interface InsightLike {
  title: string;
  description: string;
  mention_count: number;
  quotes: { text: string; source_id: string; speaker?: string | null }[];
}

export interface Parsed {
  header: string[];
  rows: string[][];
}
export const parse = (file: string): Parsed => {
  const data = Papa.parse<string[]>(readFileSync(file, "utf8"), { skipEmptyLines: "greedy" }).data;
  return { header: data[0].map((h) => h.replace(/\s+/g, " ").trim()), rows: data.slice(1) };
};
export const cell = (r: string[], c: number) => (r[c] ?? "").trim();
const pct = (k: number, n: number) => Math.round((100 * k) / n);
const mean1 = (xs: number[]) => (Math.round((10 * xs.reduce((a, b) => a + b, 0)) / xs.length) / 10).toFixed(1);
const num = (s: string) => Number(s.replace(/,/g, ""));

/** Quantitative insights: their description opens with the respondents who answered. */
export const isQuantitative = (d: { description: string }) => /^\d+ respondents of “/.test(d.description);

/**
 * Recompute every figure of one quantitative insight from the parsed file; returns the respondents (row indexes)
 * behind its lead figure, for the quote check.
 */
export function checkFigures(d: InsightLike, f: Parsed, respondentRow: (speaker: string) => number): Set<number> {
  const head = /^(\d+) respondents of “[^”]+” answered “(.+?)”\. /.exec(d.description);
  expect(head, d.description).not.toBeNull();
  const n = Number(head![1]);
  const question = head![2];
  expect(d.mention_count).toBe(n);
  const col = f.header.indexOf(question);
  const grid = f.header.flatMap((h, c) => (h.startsWith(`${question} [`) ? [[c, h.slice(question.length + 2, -1)] as const] : []));
  const lead = new Set<number>();

  const list = [...d.description.matchAll(/“([^”]+)” ([\d,]+) \((\d+)%\)/g)].map((m) => ({ option: m[1], count: num(m[2]), pct: Number(m[3]) }));
  if (/ (Answers|Picks)[^:]*: “/.test(d.description)) {
    // Single choice or multi-select (";"-joined picks).
    expect(col, question).toBeGreaterThanOrEqual(0);
    const multi = /Picks/.test(d.description);
    const picks = (r: string[]) => (multi ? [...new Set(cell(r, col).split(";").map((p) => p.trim()).filter(Boolean))] : cell(r, col) ? [cell(r, col)] : []);
    const answered = f.rows.filter((r) => picks(r).length);
    expect(answered.length).toBe(n);
    expect(list.length).toBeGreaterThan(1);
    for (const o of list) {
      const k = answered.filter((r) => picks(r).includes(o.option)).length;
      expect(o.count, `${question}: ${o.option}`).toBe(k);
      expect(o.pct).toBe(pct(k, n));
    }
    // Every option of the file is listed.
    expect(new Set(list.map((o) => o.option))).toEqual(new Set(answered.flatMap(picks)));
    const t = /^(\d+)% of respondents \(([\d,]+) of ([\d,]+)\) (?:answered|chose) “([^”]+)”/.exec(d.title);
    const split = /^Respondents split on “.+”: “([^”]+)” (\d+)% vs “([^”]+)” (\d+)% \(n=([\d,]+)\)$/.exec(d.title);
    expect(t ?? split, d.title).not.toBeNull();
    if (t) {
      const k = answered.filter((r) => picks(r).includes(t[4])).length;
      expect([Number(t[1]), num(t[2]), num(t[3])]).toEqual([pct(k, n), k, n]);
      f.rows.forEach((r, i) => picks(r).includes(t[4]) && lead.add(i));
    } else {
      for (const [o, p] of [[split![1], split![2]], [split![3], split![4]]]) {
        expect(Number(p)).toBe(pct(answered.filter((r) => picks(r).includes(o)).length, n));
        f.rows.forEach((r, i) => picks(r).includes(o) && lead.add(i));
      }
      expect(num(split![5])).toBe(n);
    }
    return lead;
  }
  if (/^Mean rating/.test(d.title)) {
    expect(col, question).toBeGreaterThanOrEqual(0);
    const values = f.rows.map((r) => cell(r, col)).filter((v) => /^\d+$/.test(v)).map(Number);
    expect(values.length).toBe(n);
    for (const o of list) {
      const k = values.filter((v) => v === Number(o.option)).length;
      expect([o.count, o.pct]).toEqual([k, pct(k, n)]);
    }
    const t = /^Mean rating ([\d.]+) on a (\d+)–(\d+) scale for “.+”; (\d+)% rate (\d+) or (\d+) \(n=([\d,]+)\)$/.exec(d.title);
    expect(t, d.title).not.toBeNull();
    expect(t![1]).toBe(mean1(values));
    expect(Number(t![4])).toBe(pct(values.filter((v) => v >= Number(t![5])).length, n));
    expect(num(t![7])).toBe(n);
    expect(d.description).toContain(`mean ${mean1(values)};`);
    const hi = Number(t![5]);
    f.rows.forEach((r, i) => /^\d+$/.test(cell(r, col)) && Number(cell(r, col)) >= hi && lead.add(i));
    return lead;
  }
  // Ranking: a grid of one column per option, or "[option]: n" cells.
  const ranks = new Map<string, Map<number, number>>();
  const put = (o: string, i: number, v: number) => ranks.set(o, (ranks.get(o) ?? new Map()).set(i, v));
  if (grid.length) {
    f.rows.forEach((r, i) => grid.forEach(([c, o]) => /^\d+$/.test(cell(r, c)) && put(o, i, Number(cell(r, c)))));
  } else {
    expect(col, question).toBeGreaterThanOrEqual(0);
    f.rows.forEach((r, i) => {
      for (const m of cell(r, col).matchAll(/\[([^\]]+)\]\s*:\s*(\d+)/g)) put(m[1].trim(), i, Number(m[2]));
    });
  }
  expect(new Set([...ranks.values()].flatMap((m) => [...m.keys()])).size).toBe(n);
  const per = [...d.description.matchAll(/“([^”]+)” mean rank ([\d.]+) \(([\d,]+) respondents, first for ([\d,]+)\)/g)];
  expect(per.length).toBe(ranks.size);
  for (const [, o, m, c, first] of per) {
    const vs = [...ranks.get(o)!.values()];
    expect([m, num(c), num(first)]).toEqual([mean1(vs), vs.length, vs.filter((v) => v === 1).length]);
  }
  const t = /^“([^”]+)” ranked first on average for “.+” \(mean rank ([\d.]+) of (\d+), n=([\d,]+)\)$/.exec(d.title);
  expect(t, d.title).not.toBeNull();
  const vs = [...ranks.get(t![1])!.values()];
  expect([t![2], num(t![4])]).toEqual([mean1(vs), vs.length]);
  // The top item has the lowest mean rank of all options.
  for (const m of ranks.values()) expect(Number(mean1(vs))).toBeLessThanOrEqual(Number(mean1([...m.values()])));
  for (const [i, v] of ranks.get(t![1])!) if (v === 1) lead.add(i);
  return lead;
}

/** Quotes: verbatim, inside a free-text answer of a lead respondent (never a closed answer), no rank pair. */
export function checkQuotes(d: InsightLike, source: { extracted_text: string }, f: Parsed, lead: Set<number>, respondentRow: (s: string) => number, freeText: number[]) {
  expect(d.quotes.length).toBeGreaterThanOrEqual(1);
  for (const q of d.quotes) {
    expect(source.extracted_text.includes(q.text)).toBe(true);
    expect(q.text).not.toMatch(/\]\s*:\s*\d/);
    const row = respondentRow(q.speaker!);
    expect(lead.has(row), `${q.speaker} is not behind “${d.title}”`).toBe(true);
    expect(freeText.some((c) => cell(f.rows[row], c).includes(q.text)), q.text).toBe(true);
  }
}


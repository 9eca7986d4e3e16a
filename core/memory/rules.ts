/**
 * The local engine's fact extractor (DESIGN.md 6.6): rules over the user's own statements, no model.
 *
 * What it is: the user's message is cut into sentences (Intl.Segmenter) and clauses ("..., and we use Linear"),
 * and each clause is matched against first-person patterns a product person uses to tell a colleague about their
 * team: who they are ("I'm the PM of ..."), the team ("we are a team of 8", "we're a B2B startup"), the product
 * ("we're building ...", "our product is ..."), its users ("our users are ...", "we sell to ..."), tools ("we use
 * Mixpanel for analytics", "we switched from Jira to Linear", "we no longer use Slack"), goals and focus ("our goal
 * this quarter is ...", "we're focused on ..."), stage and launches ("we're in beta", "we just launched ..."), metrics
 * ("our churn is 4%", "we have 12,000 users"), competitors and preferences ("I prefer short answers"). A match gives
 * the fact's subject (what it is about) and value, so reconciliation can tell a restatement from a change.
 * Clauses with a time marker ("this quarter", "right now", "in March", "2025") are dynamic facts; change markers
 * ("actually", "now", "switched", "no longer") say an earlier fact is replaced.
 *
 * What it is not: it does not read questions, requests, conditionals, negations it has no pattern for, the
 * assistant's answers or research text; it keeps the user's sentence as the fact's content rather than rewriting it,
 * and it misses facts phrased in ways its patterns do not cover (a model engine reads those).
 */
import { MAX_FACT_CHARS, MAX_FACTS_PER_MESSAGE, type ExtractedFact } from "./types";

/** Discourse openers stripped before matching ("Actually, we ..." is matched as "we ..."). */
const LEADS =
  /^(?:(?:actually|also|btw|by the way|fyi|for context|for the record|just so you know|just to let you know|note that|ok(?:ay)?|so|well|oh|and|but|hi|hey|hello|correction|quick update|update|to clarify|to correct (?:that|myself)|as a reminder|reminder|remember(?: that)?|keep in mind(?: that)?|for your information|one more thing|heads up|small correction|sorry|no|yes|yeah)\b[\s,:;.!-]*)+/i;

/** Words that say an earlier fact no longer holds. */
const CHANGE = /\b(actually|correction|to correct|no longer|any ?more|(?<!right |for |as of |until |by )now|switched|moved|migrated|changed|replaced|instead|since then|turns out|scratch that|i meant|not .{1,40} but)\b/i;

/** Time markers: a clause carrying one is dated context (a dynamic fact). */
const TIME =
  /\b(today|tonight|yesterday|tomorrow|this (?:week|month|quarter|year|sprint|cycle|release|season)|last (?:week|month|quarter|year|sprint|release)|next (?:week|month|quarter|year|sprint|release)|recently|lately|currently|right now|at the moment|for now|these days|so far|as of|q[1-4]|h[12]|(?:in|by|since|on|until|before|after) (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*|20\d\d|\d{1,2}\/\d{1,2}(?:\/\d{2,4})?|just (?:launched|shipped|released|started|hired|raised|lost|signed))\b/i;

/** Clause openings that are not statements: questions, requests, conditions, suggestions. */
const NOT_A_STATEMENT =
  /^(?:if|when|whether|suppose|assuming|unless|what|how|why|who|whom|which|where|can|could|would|should|do|does|did|is|are|was|were|will|shall|may|might|please|let's|let us|tell|show|list|find|draft|write|create|make|give|generate|summari[sz]e|explain|help|compare|analy[sz]e|search|look|check|run|approve|accept|reject|mark|move|update the|add|remove|delete|open|read)\b/i;

/** Role words: "I'm the <...>" is a role only when one of these is in it. */
const ROLE =
  /\b(pm|apm|gpm|product manager|product owner|product lead|head of|vp|vice president|director|cpo|ceo|cto|coo|founder|co-?founder|designer|ux|ui|researcher|engineer|developer|architect|analyst|data scientist|marketer|marketing|growth|lead|manager|owner|consultant|intern|student|teacher|scientist|maintainer|contributor|admin|administrator|strategist|writer|editor)\b/i;

const NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|a hundred|a dozen|a few|a handful of";

/** Tool categories "our <category> is X" names (the category becomes the tool's purpose). */
const TOOL_CATEGORY =
  /^(?:(?:product |web |mobile )?analytics(?: tool| platform| stack)?|issue tracker|bug tracker|ticket(?:ing)? (?:tool|system)|project management tool|crm|design tool|data warehouse|warehouse|(?:tech )?stack|ci|ci\/cd|hosting(?: provider)?|cloud(?: provider)?|database|backend|frontend|support tool|help ?desk|roadmap tool|wiki|docs tool|documentation tool|chat tool|messaging tool|payment provider|billing (?:system|provider)|feature flag(?:ging)? tool|experimentation tool|survey tool|research tool|repository host|code host|source control)$/i;

const STOP = new Set(
  "a an the to of for on in at by with from and or our we us my i it its this that these those is are be our your their all any some most mostly mainly more tool tools platform system".split(" "),
);

/** A word cut to a rough stem, so "tracking" and "tracker", "analytics" and "analytic" meet. */
export function stem(word: string): string {
  let w = word.toLowerCase();
  for (const suffix of ["ing", "ers", "er", "ies", "s"]) {
    if (w.length > suffix.length + 3 && w.endsWith(suffix)) {
      w = w.slice(0, -suffix.length) + (suffix === "ies" ? "y" : "");
      break;
    }
  }
  return w;
}

/** The content stems of a phrase, sorted and joined with "-" (a tool's purpose as a subject key). */
export function stemKey(phrase: string): string {
  const stems = [...new Set(phrase.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w && !STOP.has(w)).map(stem))].sort();
  return stems.join("-");
}

/** A time phrase at the end of a value ("onboarding this sprint", "Linear last month"): the fact's kind says it is dated. */
const TRAILING_TIME =
  /\s+(?:(?:this|last|next) (?:week|month|quarter|year|sprint|cycle|release)|right now|now|currently|today|at the moment|for now|these days|recently|lately|so far|as of .+|(?:in|since) (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*(?: 20\d\d)?|(?:in|since) 20\d\d)$/i;

/** A value for comparison: lower case, quotes, trailing time phrases and punctuation gone, leading articles gone, single spaces. */
export function normalizeValue(v: string): string {
  let out = v
    .toLowerCase()
    .replace(/[“”"'`]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^(?:a|an|the|our|my)\s+/, "")
    .replace(/[\s.,;:!]+$/, "")
    .trim();
  for (let i = 0; i < 3 && TRAILING_TIME.test(out); i++) out = out.replace(TRAILING_TIME, "").replace(/[\s,;:]+$/, "");
  return out;
}

/** A tool's name as a subject key: "Google Analytics" → "google-analytics". */
const toolKey = (name: string) => normalizeValue(name).replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");

/** "Jira, Slack and Notion" → ["Jira", "Slack", "Notion"]. */
const splitList = (s: string) => s.split(/\s*(?:,|\band\b|&|\bplus\b|\bas well as\b)\s*/i).map((x) => x.trim()).filter(Boolean);

/** A clause as stored: opener stripped, first letter upper case, ending with a full stop. */
function asContent(clause: string): string {
  const c = clause.replace(/\s+/g, " ").trim().replace(/[\s,;:]+$/, "");
  const capital = c.charAt(0).toUpperCase() + c.slice(1);
  return /[.!]$/.test(capital) ? capital.replace(/!$/, ".") : `${capital}.`;
}

/** What a pattern makes of its match (the clause's content, kind and change are filled in by the caller). */
/**
 * `dynamic`: always dated context (stage, focus, launches, metrics); `stable`: always a static fact whatever time it
 * mentions ("we switched to Linear last month" stays true after the month); neither: dynamic when the clause carries
 * a time marker.
 */
type Partial = Pick<ExtractedFact, "subject" | "value" | "multi"> & { replaces?: string[]; change?: boolean; dynamic?: boolean; stable?: boolean };
type Rule = { re: RegExp; build: (m: RegExpExecArray) => Partial | Partial[] | null };

/** Words that start a phrase, not a tool's name ("we use it a lot", "we use this to ..."). */
const NOT_A_NAME = /^(?:it|its|this|that|them|these|those|one|ones|some|something|anything|nothing|everything|what|which|whatever|a lot|lots|the same|our own|both|all|each|every|different|various|many|several|to)\b/i;

/** "X for Y", "X to Y", "X instead of Z": the tool list, its purpose and what it replaces. */
function toolUse(rest: string): { tools: string[]; purpose?: string; replaces: string[] } {
  let body = rest;
  const replaces: string[] = [];
  const instead = /\s+(?:instead of|rather than|in place of|over)\s+(.+)$/i.exec(body);
  if (instead) {
    replaces.push(...splitList(instead[1]!).map(normalizeValue));
    body = body.slice(0, instead.index);
  }
  const purpose = /\s+(?:for|to|as our|as the|as a)\s+(.+)$/i.exec(body);
  const toolPart = purpose ? body.slice(0, purpose.index) : body;
  const tools = splitList(toolPart.replace(TRAILING_TIME, "").replace(/\s+(?:still|too|also)$/i, ""));
  return { tools, purpose: purpose?.[1]?.trim(), replaces };
}

/** Tool facts: one subject per purpose when a purpose is named (one tool per job), else one per tool. */
function toolFact(rest: string, opts: { change?: boolean; replaces?: string[] } = {}): Partial | null {
  const { tools, purpose, replaces } = toolUse(rest);
  if (tools.length === 0 || tools.length > 6 || tools.some((t) => t.length > 60 || NOT_A_NAME.test(t))) return null;
  const value = tools.map(normalizeValue).join(", ");
  const all = [...replaces, ...(opts.replaces ?? [])];
  const key = purpose ? stemKey(purpose) : "";
  const change = !!opts.change || all.length > 0;
  if (key) return { subject: `tool.for:${key}`, value, multi: false, replaces: all, change, stable: true };
  return { subject: `tool:${tools.map(toolKey).join("+")}`, value: "used", multi: false, replaces: all, change, stable: true };
}

const RULES: Rule[] = [
  // Tools no longer in use (a retraction: supersedes the facts naming the tool).
  {
    re: /^we(?:'ve| have)?\s+(?:no longer use|stopped using|quit using|dropped|got rid of|moved away from|are no longer using|no longer rely on|don't use|do not use|aren't using|are not using)\s+(.+?)(?:\s+any ?more)?(?:\s+for\s+(.+?))?$/i,
    build: (m) => {
      const tools = splitList(m[1]!);
      if (!tools.length || tools.some((t) => t.length > 60)) return null;
      const retracts = /no longer|stopped|quit|dropped|got rid|moved away|any ?more/i.test(m[0]);
      return { subject: `tool:${tools.map(toolKey).join("+")}`, value: "not used", multi: false, replaces: tools.map(normalizeValue), change: retracts, stable: true };
    },
  },
  // Switching tools: "we switched (from X) to Y (for Z)", "we replaced X with Y".
  {
    re: /^we(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:switched|moved|migrated|changed|transitioned)\s+(?:over\s+|our\s+[\w\s]+?\s+)?(?:from\s+(.+?)\s+)?to\s+(.+)$/i,
    build: (m) => toolFact(m[2]!, { change: true, replaces: m[1] ? splitList(m[1]).map(normalizeValue) : [] }),
  },
  {
    re: /^we(?:'ve| have)?\s+(?:just\s+|recently\s+)?replaced\s+(.+?)\s+with\s+(.+)$/i,
    build: (m) => toolFact(m[2]!, { change: true, replaces: splitList(m[1]!).map(normalizeValue) }),
  },
  // Tools in use: "we use X (for Y)", "we're using X", "we rely on X", "our analytics tool is X".
  {
    re: /^(?:right now |currently |today |now |these days |at the moment )?we(?:'re| are)?\s+(?:now\s+|currently\s+|still\s+|mostly\s+|mainly\s+|also\s+|already\s+|primarily\s+)?(?:use|using|rely on|relying on|work in|build (?:it |everything )?(?:on|with)|run on|running on|are on|host (?:it |everything )?on|track (?:\w+ )?(?:in|with))\s+(.+)$/i,
    build: (m) => toolFact(m[1]!),
  },
  {
    re: /^our\s+(?:main\s+|primary\s+|current\s+|new\s+)?([a-z/ -]{2,40}?)\s+(?:is|are)\s+(?:now\s+)?(.+)$/i,
    build: (m) => (TOOL_CATEGORY.test(m[1]!.trim()) ? toolFact(`${m[2]} for ${m[1]}`) : null),
  },
  // Who the user is.
  {
    re: /^(?:i am|i'm|im)\s+(?:the|a|an|our|one of the)\s+(.+)$/i,
    build: (m) => (ROLE.test(m[1]!) && m[1]!.length <= 120 ? { subject: "user.role", value: normalizeValue(m[1]!), multi: false, stable: true } : null),
  },
  { re: /^my (?:role|title|job|position) is\s+(.+)$/i, build: (m) => ({ subject: "user.role", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  {
    re: /^i (?:work as|am working as|serve as)\s+(.+)$/i,
    build: (m) => ({ subject: "user.role", value: normalizeValue(m[1]!), multi: false, stable: true }),
  },
  { re: /^i (?:lead|run|manage|head|own)\s+(.+)$/i, build: (m) => ({ subject: "user.role", value: `leads ${normalizeValue(m[1]!)}`, multi: false, stable: true }) },
  { re: /^i (?:work|am working) (?:at|for|in)\s+(.+)$/i, build: (m) => ({ subject: "user.employer", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  { re: /^(?:i am|i'm) on the\s+(.+?)\s+team$/i, build: (m) => ({ subject: "user.team", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  { re: /^my name is\s+(.+)$/i, build: (m) => ({ subject: "user.name", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  // Team size.
  {
    re: new RegExp(
      `^(?:we are|we're|we have|there are)\\s+(?:now\\s+)?(?:a\\s+(?:small\\s+|tiny\\s+|lean\\s+|growing\\s+)?team\\s+of\\s+)?(?:about\\s+|around\\s+|roughly\\s+)?(\\d+|${NUMBER_WORDS})\\s+(people|persons|engineers|developers|designers|pms|product managers|employees|folks|of us|researchers)\\b`,
      "i",
    ),
    build: (m) => ({ subject: "team.size", value: normalizeValue(`${m[1]} ${m[2]}`), multi: false, stable: true }),
  },
  {
    re: new RegExp(`^(?:our|my)\\s+(?:(product|engineering|design|research|data|growth)\\s+)?team\\s+(?:is|has|counts|is now|now has)\\s+(?:about\\s+|around\\s+)?(\\d+|${NUMBER_WORDS})\\s*(\\w+)?`, "i"),
    build: (m) => ({ subject: m[1] ? `team.${m[1].toLowerCase()}.size` : "team.size", value: normalizeValue(`${m[2]} ${m[3] ?? "people"}`), multi: false, stable: true }),
  },
  // Stage (before identity: "we're in beta" is a stage, not a kind of company).
  {
    re: /^(?:we are|we're|the product is|our product is|our app is)\s+(?:currently\s+|still\s+|now\s+|finally\s+)?(?:in\s+)?(pre-?launch|stealth(?: mode)?|alpha|closed beta|private beta|public beta|open beta|beta|general availability|ga|production|early access|mvp stage|pilot|live)\b/i,
    build: (m) => ({ subject: "product.stage", value: normalizeValue(m[1]!), multi: false, dynamic: true }),
  },
  // The users (before identity and product).
  {
    re: /^our\s+(?:main\s+|primary\s+|core\s+|target\s+|typical\s+|biggest\s+|ideal\s+|key\s+|current\s+)*(?:users?|customers?|clients?|audience|buyers?|user base|customer base|personas?|segment|market)\s+(are|is|include|includes)\s+(?:mostly\s+|mainly\s+|primarily\s+|largely\s+|now\s+)?(.+)$/i,
    build: (m) => (/^include/i.test(m[1]!) ? { subject: "product.users.include", value: normalizeValue(m[2]!), multi: true, stable: true } : { subject: "product.users", value: normalizeValue(m[2]!), multi: false, stable: true }),
  },
  { re: /^we\s+(?:now\s+)?(?:sell to|serve|target|build for|are building for)\s+(.+)$/i, build: (m) => ({ subject: "product.users", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  {
    re: /^our\s+(?:users?|customers?|clients?)\s+(?!are\b|is\b|include)(\w.{3,})$/i,
    build: (m) => ({ subject: "product.users.about", value: normalizeValue(m[1]!), multi: true }),
  },
  // The product.
  {
    re: /^(?:we(?:'re| are)\s+(?:building|making|developing)|we (?:build|make|develop|sell|offer|provide))\s+(.+)$/i,
    build: (m) => ({ subject: "product.what", value: normalizeValue(m[1]!), multi: false, stable: true }),
  },
  { re: /^(?:our|the) (?:product|app|platform|service|tool) is\s+(?:called\s+)?(.+)$/i, build: (m) => ({ subject: "product.what", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  { re: /^our (?:company|startup|organi[sz]ation|business) is\s+(?:called\s+)?(.+)$/i, build: (m) => ({ subject: "team.company", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  // What the team is.
  { re: /^(?:we are|we're)\s+(?:now\s+)?(?:a|an)\s+(.{3,120})$/i, build: (m) => ({ subject: "team.identity", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  // Goals, priorities, focus.
  {
    re: /^our\s+(?:main\s+|primary\s+|top\s+|biggest\s+|big\s+|key\s+|current\s+|#1\s+|number one\s+|only\s+)*(goal|objective|priority|focus|north star(?: metric)?|okr|mission|target|strategy|vision)s?\s*((?:for|this|next|in)\s+[\w\s]+?)?\s+(?:is|are|will be|remains)\s+(?:now\s+)?(?:to\s+)?(.+)$/i,
    build: (m) => ({ subject: `team.${m[1]!.toLowerCase().replace(/\s+/g, "_")}`, value: normalizeValue(m[3]!), multi: false, dynamic: !!m[2] }),
  },
  {
    re: /^we(?:'re| are)\s+(?:now\s+|currently\s+|mainly\s+|mostly\s+)?(?:focused on|focusing on|working on|prioriti[sz]ing)\s+(.+)$/i,
    build: (m) => ({ subject: "team.focus", value: normalizeValue(m[1]!), multi: false, dynamic: true }),
  },
  {
    re: /^we(?:'re| are)?\s+(?:want to|trying to|try to|aim to|aiming to|plan to|planning to|need to|hope to|intend to|are going to|going to)\s+(?!(?:know|see|understand|find out|learn|ask|get a|hear|check|look)\b)(.+)$/i,
    build: (m) => ({ subject: "team.intent", value: normalizeValue(m[1]!), multi: true }),
  },
  // Launches and dates.
  {
    re: /^we(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?(launched|shipped|released|rolled out|introduced|announced)\s+(.+)$/i,
    build: (m) => ({ subject: "product.launched", value: normalizeValue(m[2]!), multi: true, dynamic: true }),
  },
  {
    re: /^we(?:'re| are|'ll be| will be| will)?\s+(?:launching|shipping|releasing|rolling out|launch|ship|release)\s+(.+)$/i,
    build: (m) => ({ subject: "plan.launch", value: normalizeValue(m[1]!), multi: true, dynamic: true }),
  },
  {
    re: /^(?:our\s+)?(?:deadline|launch date|release date|ship date|go-live date|launch)\s+is\s+(?:now\s+)?(.+)$/i,
    build: (m) => ({ subject: "plan.deadline", value: normalizeValue(m[1]!), multi: false, dynamic: true }),
  },
  // Metrics.
  {
    re: /^our\s+(churn(?: rate)?|retention(?: rate)?|nps|net promoter score|conversion(?: rate)?|activation(?: rate)?|mrr|arr|revenue|dau|mau|wau|csat|ltv|cac|arpu|burn(?: rate)?|runway)\s+(is|was|are|sits at|stands at|is at|is around|is about|(?:has\s+)?(?:dropped|fell|rose|grew|went up|went down|increased|decreased|jumped|improved)\s+(?:to|from\s+\S+\s+to))\s+(.+)$/i,
    build: (m) => ({
      subject: `metric.${m[1]!.toLowerCase().replace(/\s+rate$/, "").replace(/\s+/g, "_")}`,
      value: normalizeValue(m[3]!),
      multi: false,
      dynamic: true,
      change: /dropped|fell|rose|grew|went|increased|decreased|jumped|improved/i.test(m[2]!),
    }),
  },
  {
    re: /^we\s+(?:now\s+)?have\s+(?:about\s+|around\s+|over\s+|roughly\s+|nearly\s+|almost\s+|more than\s+|just over\s+|under\s+)?([\d][\d,.]*\s*[kmb]?|\w+ (?:thousand|million|hundred))\s+(users|customers|clients|subscribers|paying customers|accounts|active users|monthly active users|daily active users|teams|seats|downloads)\b/i,
    build: (m) => ({ subject: `metric.${m[2]!.toLowerCase().replace(/\s+/g, "_")}`, value: normalizeValue(m[1]!), multi: false, dynamic: true }),
  },
  // Competitors.
  {
    re: /^our\s+(?:main\s+|biggest\s+|closest\s+|direct\s+)?competitors?\s+(is|are|include|includes)\s+(.+)$/i,
    build: (m) => (/^include/i.test(m[1]!) ? { subject: "market.competitors.include", value: normalizeValue(m[2]!), multi: true, stable: true } : { subject: "market.competitors", value: normalizeValue(m[2]!), multi: false, stable: true }),
  },
  { re: /^we\s+compete\s+(?:with|against)\s+(.+)$/i, build: (m) => ({ subject: "market.competitors.include", value: normalizeValue(m[1]!), multi: true, stable: true }) },
  // Pricing.
  { re: /^(?:our (?:pricing|price) is|we charge|we price (?:it )?at)\s+(.+)$/i, build: (m) => ({ subject: "product.pricing", value: normalizeValue(m[1]!), multi: false, stable: true }) },
  // The user's preferences for answers.
  {
    re: /^i\s+(?:prefer|'d prefer|would prefer|like|always want|want)\s+((?:short|brief|concise|long|detailed|bullet|answers|responses|replies|summaries|tables|markdown|plain|sources|citations|quotes).*)$/i,
    build: (m) => ({ subject: "user.preference", value: normalizeValue(m[1]!), multi: true, stable: true }),
  },
];

/** Sentences of a message (Intl.Segmenter, so "e.g." and decimals do not split), then clauses joined by "and we". */
function clausesOf(text: string): string[] {
  const segmenter = new Intl.Segmenter("en", { granularity: "sentence" });
  const out: string[] = [];
  for (const line of text.split(/\n+/)) {
    for (const { segment } of segmenter.segment(line)) {
      const sentence = segment.replace(/[’‘]/g, "'").trim();
      if (!sentence || sentence.endsWith("?")) continue;
      for (const clause of sentence.split(/\s*;\s*|,?\s+(?:and|but|while|whereas|although|though)\s+(?=(?:we|i|i'm|we're|we've|our|my)\b)/i)) {
        if (clause.trim()) out.push(clause.trim());
      }
    }
  }
  return out;
}

/**
 * Extract facts from one user message by rules (the local engine's extractor).
 * @param text the user's message (never the assistant's answer or research text)
 * @returns at most MAX_FACTS_PER_MESSAGE facts, in the order they were stated; [] when none is recognised
 */
export function extractByRules(text: string): ExtractedFact[] {
  const facts: ExtractedFact[] = [];
  for (const raw of clausesOf(text.slice(0, 20_000))) {
    const clause = raw.replace(LEADS, "").replace(/^[\s,:;-]+/, "").replace(/[.!]+$/, "").trim();
    if (clause.length < 6 || clause.length > 300 || NOT_A_STATEMENT.test(clause)) continue;
    for (const rule of RULES) {
      const m = rule.re.exec(clause);
      if (!m) continue;
      const built = rule.build(m);
      if (!built) continue;
      for (const p of Array.isArray(built) ? built : [built]) {
        if (!p.value || p.value.length < 2) continue;
        facts.push({
          content: asContent(clause).slice(0, MAX_FACT_CHARS),
          kind: p.dynamic || (!p.stable && TIME.test(raw)) ? "dynamic" : "static",
          subject: p.subject,
          value: p.value.slice(0, 200),
          multi: p.multi,
          change: !!p.change || CHANGE.test(raw),
          replaces: p.replaces ?? [],
        });
      }
      break;
    }
    if (facts.length >= MAX_FACTS_PER_MESSAGE) break;
  }
  return facts.slice(0, MAX_FACTS_PER_MESSAGE);
}

/**
 * What the Temporal UI shows of a run beside ids: one-line summaries of
 * workflows and activities (user metadata, fixed when they are scheduled),
 * and each workflow's current details (markdown, answered from workflow
 * state whenever the UI asks): the run's progress table, a trajectory's
 * prompt, responses, env observations, rewards and weight versions.
 *
 * Pure text building, deterministic: nothing here reads a clock or a file.
 * Setting summaries and details writes no workflow command a replay could
 * disagree with (the server keeps summaries beside the commands; details are
 * a query answer), so none of this needs a patch.
 */
import type { RunPlan } from './run-plan';

/** Longest text shown inline in details; the rest is cut with a marker that says where the full text is. */
export const DETAIL_TEXT_CHARS = 800;
/** Longest quoted text in a one-line summary. */
const SUMMARY_TEXT_CHARS = 48;
/** Trajectories shown in one workflow's details (a lockstep batch holds many): the rest are counted. */
const MAX_TRANSCRIPTS_SHOWN = 8;
/** Step rows kept in the run's progress table. */
export const PROGRESS_ROWS = 10;

/** `text` cut at `max` characters with a marker that counts what was cut and names where the full text is. */
export function cut(text: string, max: number, fullTextAt: string): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… [cut: ${text.length - max} more chars; full text: ${fullTextAt}]`;
}

/** One line, quoted, cut short: for summaries. */
export function quote(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(line.length <= SUMMARY_TEXT_CHARS ? line : `${line.slice(0, SUMMARY_TEXT_CHARS)}…`);
}

/** A fenced block whose content cannot close the fence early. */
const block = (text: string): string => `\`\`\`text\n${text.replace(/```/g, '`\u200b``')}\n\`\`\``;

const versionLabel = (versions: readonly number[]): string => (versions.length === 0 ? 'no tokens' : versions.map((v) => `v${v}`).join('→'));
const num = (x: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(3));

// ---- summaries
/** The run's own summary and details, set by the client that starts it. */
export const runSummary = (plan: Pick<RunPlan, 'envs' | 'maxSteps' | 'limits' | 'rolloutMode'>): string =>
  `${plan.envs.map((e) => e.tag).join(' + ')} · ${plan.maxSteps} step${plan.maxSteps === 1 ? '' : 's'} · ${plan.limits.samplesPerStep} samples/step · ${plan.rolloutMode}`;
export const runStaticDetails = (plan: Pick<RunPlan, 'limits' | 'seed' | 'configHash' | 'envs'>): string =>
  [
    `**Envs:** ${plan.envs.map((e) => `${e.tag} (${e.spec.type}, ${e.groupsPerStep} groups/step)`).join(', ')}`,
    `**Admission:** at most ${plan.limits.maxSamplesInSystem} samples buffered or running; staleness bound ${plan.limits.maxStaleness} (stale_policy ${plan.limits.stalePolicy})`,
    `**Seed** ${plan.seed} · **config hash** ${plan.configHash.slice(0, 12)}`,
    'The progress table is under Current Details; each group and trajectory shows its prompt, responses and reward in its own Current Details.',
  ].join('\n\n');
export const groupSummary = (uid: string, envType: string, version: number): string => `${uid} · ${envType} · v${version}`;
export const trajectoryWorkflowSummary = (uid: string, envType: string): string => `${uid} · ${envType}`;
export const generateSummary = (turn: number, maxTokens: number, samples = 1): string => `turn ${turn}${samples > 1 ? ` · n=${samples}` : ''} · ≤${maxTokens} tokens`;
export const envStepSummary = (turn: number, action: string): string => `turn ${turn} · ${quote(action)}`;
export const playTurnSummary = (turn: number, maxTokens: number): string => `turn ${turn} · ≤${maxTokens} tokens, then the env step`;
/** A trajectory's call, named by its uid: a group (trajectory_workflows false) or a lockstep batch runs several in one workflow. */
export const ofTrajectory = (uid: string, summary: string): string => `${uid} · ${summary}`;
/** The uid an ofTrajectory summary names (what a reader of a group's history tells its trajectories apart by). */
export const trajectoryOfSummary = (summary: string): string => summary.split(' · ')[0]!;
export const finishSummary = (uid: string, reward: number): string => `${uid} · reward ${num(reward)}`;
export const trainStepSummary = (step: number, samples: number, version: number): string => `step ${step} · ${samples} samples · v${version}→v${version + 1}`;
export const validateSummary = (steps: number, version: number): string => `validation after step ${steps} · v${version}`;

// ---- trajectory transcripts
interface TurnRecord {
  action: string;
  tokens: number;
  versions: number[];
  observation?: string;
  reward?: number;
  done?: boolean;
}

interface Transcript {
  envType: string;
  prompt: string;
  turns: TurnRecord[];
  reward?: number;
}

/**
 * The transcripts of the trajectories this workflow runs (one for a
 * trajectory workflow, G for a one-request group, the batch for lockstep),
 * in the order they started. Module state is per workflow execution in
 * Temporal's sandbox, and a replay rebuilds it from the same calls.
 */
const transcripts = new Map<string, Transcript>();

/** Trajectories of this workflow not kept (past MAX_TRANSCRIPTS_SHOWN): a lockstep batch keeps no text it would not show. */
const notKept = new Set<string>();

export function recordReset(uid: string, envType: string, observation: string): void {
  if (transcripts.size >= MAX_TRANSCRIPTS_SHOWN && !transcripts.has(uid)) {
    notKept.add(uid);
    return;
  }
  transcripts.set(uid, { envType, prompt: observation, turns: [] });
}

export function recordTurn(uid: string, turn: Pick<TurnRecord, 'action' | 'tokens' | 'versions'>): void {
  transcripts.get(uid)?.turns.push({ action: turn.action, tokens: turn.tokens, versions: [...turn.versions] });
}

export function recordEnvStep(uid: string, step: { observation: string; reward: number; done: boolean }): void {
  const last = transcripts.get(uid)?.turns.at(-1);
  if (last) Object.assign(last, step);
}

export function recordReward(uid: string, reward: number): void {
  const t = transcripts.get(uid);
  if (t) t.reward = reward;
}

function transcriptMarkdown(uid: string, t: Transcript): string {
  const versions = [...new Set(t.turns.flatMap((turn) => turn.versions))];
  const head = `### ${uid} · ${t.envType} · ${t.reward === undefined ? 'running' : `reward **${num(t.reward)}**`} · ${t.turns.length} turn${t.turns.length === 1 ? '' : 's'} · ${versionLabel(versions)}`;
  const parts = [head, '**Prompt**', block(cut(t.prompt, DETAIL_TEXT_CHARS, 'the envReset result in the event history'))];
  t.turns.forEach((turn, i) => {
    parts.push(`**Response, turn ${i}** · ${turn.tokens} tokens · ${versionLabel(turn.versions)}`, block(cut(turn.action, DETAIL_TEXT_CHARS, `the result of turn ${i}'s generate call in the event history`)));
    if (turn.observation !== undefined) {
      parts.push(`**Env, turn ${i}** · reward ${num(turn.reward ?? 0)}${turn.done ? ' · done' : ''}`, block(cut(turn.observation, DETAIL_TEXT_CHARS, `the result of turn ${i}'s envStep call in the event history`)));
    }
  });
  return parts.join('\n\n');
}

/** This workflow's trajectories as markdown, for its current details. */
export function transcriptDetails(): string {
  const shown = [...transcripts.entries()].map(([uid, t]) => transcriptMarkdown(uid, t));
  if (notKept.size > 0) shown.push(`_${notKept.size} more trajectories in this workflow are not shown._`);
  return shown.join('\n\n---\n\n');
}

// ---- the run's progress table
export interface RunRow {
  step: number;
  maxSteps: number;
  version: number;
  reward: number;
  validation?: { steps: number; rewardMean: number };
  stalenessMean: number;
  stalenessMax: number;
  inFlight: number;
  suspended: boolean;
}

/** The newest rows first, at most PROGRESS_ROWS of them. */
export function runDetails(rows: readonly RunRow[], now: { inFlight: number; suspended: boolean }): string {
  const header = '| step | version | reward | validation reward | staleness mean / max | in flight | suspended |\n|---|---|---|---|---|---|---|';
  const lines = rows.slice(-PROGRESS_ROWS).reverse().map((r) => `| ${r.step} of ${r.maxSteps} | v${r.version} | ${num(r.reward)} | ${r.validation ? `${num(r.validation.rewardMean)} (after step ${r.validation.steps})` : '–'} | ${num(r.stalenessMean)} / ${r.stalenessMax} | ${r.inFlight} | ${r.suspended ? 'yes' : 'no'} |`);
  // (A step is "3 of 20", not "3/20", which the UI's markdown would set as a fraction; the closing line keeps the
  // UI's frame from cutting the table's last row.)
  return [`**Now:** ${now.inFlight} samples in flight${now.suspended ? ' · **suspended**' : ''}`, '', header, ...lines, '', `_Newest step first; the last ${PROGRESS_ROWS} steps._`].join('\n');
}

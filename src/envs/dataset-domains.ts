/**
 * The dataset env's training rows grouped by domain, for domain_interleave_probs:
 * the domains in name order, each domain's rows in file order, so domain d's
 * rows are one contiguous range of training seeds and the run only needs each
 * domain's row count (DatasetIndex.domains) to pick a row of any domain
 * (workflows/domain-order.ts). Pure, so it is tested without a file.
 */
import { formatProblem } from '../configs/errors';
import type { DomainRows } from './dataset-rows';
import type { DatasetRow } from './dataset-rows';
import { EnvConfigError } from './errors';

export function groupByDomain(rows: readonly DatasetRow[], train: readonly number[]): { train: number[]; domains: DomainRows[] } {
  const byDomain = new Map<string, number[]>();
  for (const row of train) {
    const domain = rows[row]!.domain;
    const list = byDomain.get(domain) ?? [];
    if (list.length === 0) byDomain.set(domain, list);
    list.push(row);
  }
  const names = [...byDomain.keys()].sort();
  return { train: names.flatMap((name) => byDomain.get(name)!), domains: names.map((name) => ({ name, rows: byDomain.get(name)!.length })) };
}

/** Every domain domain_interleave_probs names must have training rows: found when the run starts, naming the domains the file has. */
export function checkNamedDomains(shares: Readonly<Record<string, number>>, domains: readonly DomainRows[], file: string): void {
  const missing = Object.keys(shares).filter((name) => !domains.some((d) => d.name === name));
  if (missing.length === 0) return;
  const has = domains.map((d) => `${d.name} (${d.rows} rows)`).join(', ');
  const expected = `domains that ${file} has training rows of; it has ${has}, not ${missing.join(', ')}`;
  throw new EnvConfigError(`dataset:\n${formatProblem({ path: 'domain_interleave_probs', given: shares, expected })}`, [{ path: 'domain_interleave_probs', given: shares, expected }]);
}

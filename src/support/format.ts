/** How the service writes counts and times for people: in mail, in problem details, in answers. */

/**
 * A count with its noun in agreement, such as "1 minute" and "5 minutes": every place that
 * prints a count to a person goes through here, so that none says "1 minutes".
 */
export function formatCount(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}

/** ISO 8601 in UTC without fractions, such as 2026-11-21T10:30:00Z. */
export function isoUtc(date: Date): string {
  // toISOString always ends in `.sssZ`; cutting it off costs a tenth of a regex replace.
  return `${date.toISOString().slice(0, -5)}Z`;
}

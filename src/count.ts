/**
 * A count with its noun in agreement, such as "1 minute" and "5 minutes": every place that
 * prints a count to a person goes through here, so that none says "1 minutes".
 */
export function formatCount(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}

import { explained } from '../http/validate.ts';

/**
 * The BCP 47 tags this service takes: a language, then optionally a script and a region (de,
 * de-AT, zh-Hant-TW, es-419). Variants and extensions are refused: no mail template is written
 * for them, and the bound (at most 12 characters) keeps what a stranger can store small.
 */
export const localePattern = explained(
  /^[a-zA-Z]{2,3}(-[a-zA-Z]{4})?(-[a-zA-Z]{2}|-[0-9]{3})?$/, 'a locale such as de, de-AT or pt-BR',
);

/** The tag in its canonical case (de-AT, zh-Hant), or null when it is not one that localePattern takes. */
export function canonicalLocale(tag: string): string | null {
  return localePattern.test(tag) ? Intl.getCanonicalLocales(tag)[0]! : null;
}

/** The tag, then its language alone: where a mail in `de-AT` looks for its template. */
export function localeChain(tag: string | null): string[] {
  if (tag === null) return [];
  const language = tag.split('-')[0]!;
  return language === tag ? [tag] : [tag, language];
}

/**
 * The first locale of `available` that an Accept-Language header asks for, best quality first,
 * a region falling back to its language; null when none matches. Only the first 16 entries of
 * the header's first 512 characters are read, so that a long header costs no more.
 */
export function negotiateLocale(header: string | undefined, available: readonly string[]): string | null {
  const wanted = (header ?? '').slice(0, 512).split(',').slice(0, 16).map((entry) => {
    const [tag = '', ...parameters] = entry.split(';').map((part) => part.trim());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    return { tag: canonicalLocale(tag), q: q === undefined ? 1 : Number(q.slice(2)) };
  });
  const ranked = wanted.filter((entry) => entry.tag !== null && entry.q > 0).sort((a, b) => b.q - a.q);
  for (const { tag } of ranked) {
    const match = localeChain(tag).find((candidate) => available.includes(candidate));
    if (match !== undefined) return match;
  }
  return null;
}

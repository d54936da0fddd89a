/**
 * String comparison under a collation, as mongod's ICU collator does it, built on the platform's
 * ICU through `Intl.Collator` (full ICU in Node 20). mongod's collation document maps onto it:
 *
 * | mongod | Intl.Collator |
 * | --- | --- |
 * | `locale` (ICU id, `de@collation=phonebook`) | BCP 47 tag (`de-u-co-phonebk`) |
 * | `strength` 1 / 2 / 3 | `sensitivity` base / accent / variant |
 * | `caseLevel` (strength 1, 2) | `sensitivity` case / variant |
 * | `caseFirst` upper / lower / off | `caseFirst` upper / lower / false |
 * | `numericOrdering` | `numeric` |
 * | `alternate: shifted` (`maxVariable: punct`) | `ignorePunctuation` |
 *
 * What Intl cannot set is emulated: strength 4 (quaternary) breaks ties of a `shifted` comparison
 * with a non-ignoring one; strength 5 (identical) breaks remaining ties by code points of the NFD
 * forms; `maxVariable: space` ignores only whitespace; `backwards` (French secondary order) on a
 * locale whose tailoring lacks it compares accents from the end of the string. `normalization` is
 * always on in Intl (ECMA-402 treats canonically equivalent strings as equal), and the platform's
 * ICU/CLDR is newer than mongod's ICU 57.1 data (see the README for how close this comes).
 */

/** ICU collation keyword values and their BCP 47 `-u-co-` forms. */
const COLLATION_KEYWORDS: Record<string, string> = {
  phonebook: 'phonebk',
  dictionary: 'dict',
  traditional: 'trad',
  gb2312han: 'gb2312',
  big5han: 'big5han',
  pinyin: 'pinyin',
  stroke: 'stroke',
  unihan: 'unihan',
  zhuyin: 'zhuyin',
  search: 'search',
  standard: 'standard',
  emoji: 'emoji',
  eor: 'eor',
  compat: 'compat',
};

/** A mongod/ICU locale id as a BCP 47 tag (`fr_CA` → `fr-CA`, `de@collation=phonebook` → `de-u-co-phonebk`). */
export function localeTag(locale: string): string {
  const [base, keywords] = locale.split('@');
  let tag = base.replace(/_/g, '-');
  const variant = /collation=([a-z0-9]+)/i.exec(keywords ?? '')?.[1];
  if (variant) tag += `-u-co-${COLLATION_KEYWORDS[variant.toLowerCase()] ?? variant.toLowerCase()}`;
  return tag;
}

/** The fields of mongod's full collation specification (storage/collation.ts fills them in). */
export interface CollationSpec {
  locale: string;
  caseLevel: boolean;
  caseFirst: string;
  strength: number;
  numericOrdering: boolean;
  alternate: string;
  maxVariable: string;
  normalization: boolean;
  backwards: boolean;
}

/** A comparison of two strings under a collation: negative, 0 or positive. */
export type StringComparison = (a: string, b: string) => number;

function codePoints(a: string, b: string): number {
  const x = a.normalize('NFD');
  const y = b.normalize('NFD');
  return x < y ? -1 : x > y ? 1 : 0;
}

const WHITESPACE = /\s/gu;

/** Builds the string comparison of a full collation specification. */
export function stringComparison(spec: CollationSpec): StringComparison {
  const tag = localeTag(spec.locale);
  const shifted = spec.alternate === 'shifted';
  const make = (sensitivity: Intl.CollatorOptions['sensitivity'], ignorePunctuation: boolean) =>
    new Intl.Collator(tag, {
      usage: 'sort',
      sensitivity,
      ignorePunctuation,
      numeric: spec.numericOrdering,
      caseFirst: spec.caseFirst === 'upper' || spec.caseFirst === 'lower' ? spec.caseFirst : 'false',
    }).compare;
  let sensitivity: Intl.CollatorOptions['sensitivity'] = 'variant';
  if (spec.strength === 1) sensitivity = spec.caseLevel ? 'case' : 'base';
  else if (spec.strength === 2) sensitivity = spec.caseLevel ? 'variant' : 'accent';
  // maxVariable 'space' ignores whitespace only: Intl's ignorePunctuation ignores punctuation too.
  const spaceOnly = shifted && spec.maxVariable === 'space';
  let compare = make(sensitivity, shifted && !spaceOnly);
  if (spaceOnly) {
    const inner = compare;
    compare = (a, b) => inner(a.replace(WHITESPACE, ''), b.replace(WHITESPACE, ''));
  }
  const localeIsBackwards = new Intl.Collator(tag).compare('côte', 'coté') < 0;
  if (spec.backwards && !localeIsBackwards && spec.strength >= 2) compare = frenchSecondary(make, spec, compare);
  if (spec.strength >= 4 && shifted) {
    const ignoring = compare;
    const full = make('variant', false);
    compare = (a, b) => ignoring(a, b) || full(a, b);
  }
  if (spec.strength === 5) {
    const below = compare;
    compare = (a, b) => below(a, b) || codePoints(a, b);
  }
  return compare;
}

/**
 * French secondary ordering (ICU's `backwards`): accents weigh from the end of the string. Strings
 * equal at the primary level are compared accent by accent from their last character; the rest of
 * the comparison is the locale's.
 */
function frenchSecondary(
  make: (sensitivity: Intl.CollatorOptions['sensitivity'], ignorePunctuation: boolean) => StringComparison,
  spec: CollationSpec,
  tertiary: StringComparison,
): StringComparison {
  const ignorePunctuation = spec.alternate === 'shifted';
  const primary = make('base', ignorePunctuation);
  const accent = make('accent', ignorePunctuation);
  const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  const graphemes = (s: string) => Array.from(segmenter.segment(s), (g) => g.segment);
  return (a, b) => {
    const p = primary(a, b);
    if (p !== 0) return p;
    const ga = graphemes(a);
    const gb = graphemes(b);
    if (ga.length === gb.length) {
      for (let i = ga.length - 1; i >= 0; i--) {
        const s = accent(ga[i], gb[i]);
        if (s !== 0) return s;
      }
    } else {
      const s = accent(a, b);
      if (s !== 0) return s;
    }
    return spec.strength >= 3 ? tertiary(a, b) : 0;
  };
}

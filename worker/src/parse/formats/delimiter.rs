//! Field delimiter detection for text uploads. Many `.csv` files use `;` (Europe, where `,` is
//! the decimal separator), `|` or tabs, and would silently parse into one column with a fixed
//! comma. We count each candidate per record in a decoded sample, outside quotes (so quoted
//! fields and embedded newlines do not skew it), and pick the candidate whose count is the most
//! consistent across records, preferring more fields on a tie. A space separates fields only
//! where nothing else does. The same sample tells how fields are quoted ([`Quoting`]: `"` or
//! `'`, doubled or backslash-escaped) and whether a space follows every delimiter (`a, b`).

/// The candidates, in order of preference on a perfect tie.
const CANDIDATES: [u8; 4] = [b',', b'\t', b';', b'|'];

/// How many records of the sample are looked at.
const MAX_RECORDS: usize = 200;

/// A space separates fields only when no candidate appears and this share of records (‰)
/// holds the same number of spaces: prose has spaces too.
const SPACE_CONSISTENCY: u64 = 800;

/// How a text file quotes its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quoting {
    pub quote: u8,
    /// A byte that escapes the quote inside quotes (`\"`); `None`: quotes are doubled.
    pub escape: Option<u8>,
}

impl Quoting {
    pub const RFC4180: Quoting = Quoting {
        quote: b'"',
        escape: None,
    };

    /// The quoting of `sample`: `"` doubled (RFC 4180) unless fields open with `'` and never
    /// with `"`; a backslash escapes the quote when the sample has `\"` inside text and no
    /// doubled quote there.
    pub fn of(sample: &str) -> Quoting {
        let b = sample.as_bytes();
        let boundary = |i: usize| {
            i == 0 || matches!(b[i - 1], b'\n' | b'\r' | b',' | b';' | b'\t' | b'|' | b' ')
        };
        let opens = |q: u8| (0..b.len()).filter(|&i| b[i] == q && boundary(i)).count();
        let quote = if opens(b'"') == 0 && opens(b'\'') >= 2 {
            b'\''
        } else {
            b'"'
        };
        let pairs = |first: u8| {
            b.windows(2)
                .enumerate()
                .filter(|&(i, w)| w == [first, quote] && !boundary(i))
                .filter(|&(i, _)| i == 0 || b[i - 1] != b'\\')
                .count()
        };
        let escape = (pairs(b'\\') > 0 && pairs(quote) == 0).then_some(b'\\');
        Quoting { quote, escape }
    }

    /// Each byte of `bytes` and whether it is quoted text or a quote (rather than structure).
    fn scan(self, bytes: &[u8]) -> impl Iterator<Item = (u8, bool)> + '_ {
        let (mut in_quotes, mut escaped) = (false, false);
        bytes.iter().map(move |&b| {
            if escaped {
                escaped = false;
                return (b, true);
            }
            if in_quotes && Some(b) == self.escape {
                escaped = true;
            } else if b == self.quote {
                in_quotes = !in_quotes;
                return (b, true);
            }
            (b, in_quotes)
        })
    }
}

/// Detects the delimiter of `sample` (decoded text). `complete` says the sample is the whole
/// file (else its last, possibly cut, record is ignored). `fallback` is used when no candidate
/// appears at all (a one-column file), unless a space splits the records consistently.
pub(crate) fn detect(sample: &str, complete: bool, fallback: u8) -> u8 {
    let quoting = Quoting::of(sample);
    let counts = count(sample, complete, quoting, &CANDIDATES);
    let mut best: Option<(u64, u32, usize)> = None; // (consistency ‰, fields, candidate)
    let preferred = CANDIDATES.iter().position(|&c| c == fallback).unwrap_or(0);
    for k in order(preferred) {
        let (mode, consistency) = mode_of(counts.iter().map(|c| c[k]));
        if mode == 0 {
            continue;
        }
        let better = match best {
            None => true,
            Some((c, m, _)) => consistency > c || (consistency == c && mode > m),
        };
        if better {
            best = Some((consistency, mode, k));
        }
    }
    if let Some((_, _, k)) = best {
        return CANDIDATES[k];
    }
    let spaces = count(sample, complete, quoting, b" ");
    match mode_of(spaces.iter().map(|c| c[0])) {
        (1.., consistency) if consistency >= SPACE_CONSISTENCY => b' ',
        _ => fallback,
    }
}

/// Whether every delimiter of `sample` outside quotes is followed by a space (`a, b, c`):
/// the spaces are then no part of the fields.
pub(crate) fn space_after(sample: &str, delimiter: u8, quoting: Quoting) -> bool {
    if matches!(delimiter, b' ' | b'\t') {
        return false;
    }
    let (mut delimiters, mut spaced, mut after) = (0usize, 0usize, false);
    for (b, quoted) in quoting.scan(sample.as_bytes()) {
        if after {
            spaced += usize::from(b == b' ');
        }
        after = !quoted && b == delimiter;
        delimiters += usize::from(after);
    }
    delimiters >= 2 && spaced == delimiters
}

/// How often each of `candidates` occurs outside quotes in each record of the sample.
fn count<const N: usize>(
    sample: &str,
    complete: bool,
    quoting: Quoting,
    candidates: &[u8; N],
) -> Vec<[u32; N]> {
    let mut counts: Vec<[u32; N]> = Vec::new();
    let mut current = [0u32; N];
    let mut record_has_content = false;
    for (b, quoted) in quoting.scan(sample.as_bytes()) {
        if counts.len() >= MAX_RECORDS {
            return counts;
        }
        if quoted {
            record_has_content = true;
        } else if b == b'\n' || b == b'\r' {
            if record_has_content {
                counts.push(current);
            }
            current = [0; N];
            record_has_content = false;
        } else {
            if let Some(k) = candidates.iter().position(|&c| c == b) {
                current[k] += 1;
            }
            record_has_content = true;
        }
    }
    // The last record counts when the sample is the whole file, or when it is all there is
    // (a single record longer than the sample).
    if record_has_content && (complete || counts.is_empty()) {
        counts.push(current);
    }
    counts
}
/// Candidate indices, the preferred one first.
fn order(preferred: usize) -> impl Iterator<Item = usize> {
    std::iter::once(preferred).chain((0..CANDIDATES.len()).filter(move |&k| k != preferred))
}

/// The most frequent non-zero value (larger value wins ties) and the share of records (‰)
/// that hold it.
fn mode_of(values: impl ExactSizeIterator<Item = u32>) -> (u32, u64) {
    let records = values.len().max(1) as u64;
    let mut v: Vec<u32> = values.filter(|&x| x > 0).collect();
    v.sort_unstable();
    let mut best = (0, 0);
    let mut i = 0;
    while i < v.len() {
        let j = v[i..].iter().take_while(|&&x| x == v[i]).count();
        if j >= best.1 {
            best = (v[i], j);
        }
        i += j;
    }
    (best.0, best.1 as u64 * 1000 / records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_candidate_is_found() {
        assert_eq!(detect("a,b,c\n1,2,3\n", true, b','), b',');
        assert_eq!(detect("a;b;c\n1,5;2,5;3\n", true, b','), b';');
        assert_eq!(detect("a\tb\n1\t2\n", true, b','), b'\t');
        assert_eq!(detect("a|b|c\r\n1|2|3\r\n", true, b','), b'|');
    }

    #[test]
    fn delimiters_inside_quotes_do_not_count() {
        let s = "name;note\n\"Smith, J\";\"a, b, c\nd, e\"\n\"Lee, K\";x\n";
        assert_eq!(detect(s, true, b','), b';');
    }

    #[test]
    fn a_single_column_uses_the_fallback() {
        assert_eq!(detect("name\nx\ny\n", true, b'\t'), b'\t');
        assert_eq!(detect("name\nx\n", true, b','), b',');
    }
}

#[cfg(test)]
mod dialect_tests {
    use super::*;

    #[test]
    fn a_space_separates_fields_only_where_nothing_else_does() {
        assert_eq!(detect("id name qty\n1 ann 5\n2 bob 7\n", true, b','), b' ');
        assert_eq!(detect("Sales report 2026\nid,qty\n1,5\n", true, b','), b',');
        assert_eq!(detect("name\nJohn Smith\nAnn\n", true, b','), b',');
    }

    #[test]
    fn single_quotes_and_backslash_escapes_are_recognised() {
        let single = "'id','name'\n'1','O''Brien, J'\n";
        assert_eq!(
            Quoting::of(single),
            Quoting {
                quote: b'\'',
                escape: None
            }
        );
        assert_eq!(detect(single, true, b';'), b',');
        let backslash = "id,note\n1,\"say \\\"hi\\\", ok\"\n";
        assert_eq!(Quoting::of(backslash).escape, Some(b'\\'));
        assert_eq!(Quoting::of("a,b\n\"x \"\"y\"\"\",2\n"), Quoting::RFC4180);
    }

    #[test]
    fn a_space_after_every_delimiter_is_no_part_of_the_fields() {
        let q = Quoting::RFC4180;
        assert!(space_after("id, name\n1, \"Lee, K\"\n", b',', q));
        assert!(!space_after("id,name\n1, x\n", b',', q));
        assert!(!space_after("a b\n1 2\n", b' ', q));
    }
}

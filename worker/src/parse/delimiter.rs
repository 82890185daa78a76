//! Field delimiter detection for text uploads. Many `.csv` files use `;` (Europe, where `,` is
//! the decimal separator), `|` or tabs, and would silently parse into one column with a fixed
//! comma. We count each candidate per record in a decoded sample, outside quotes (so quoted
//! fields and embedded newlines do not skew it), and pick the candidate whose count is the most
//! consistent across records, preferring more fields on a tie.

/// The candidates, in order of preference on a perfect tie.
const CANDIDATES: [u8; 4] = [b',', b'\t', b';', b'|'];

/// How many records of the sample are looked at.
const MAX_RECORDS: usize = 200;

/// Detects the delimiter of `sample` (decoded text). `complete` says the sample is the whole
/// file (else its last, possibly cut, record is ignored). `fallback` is used when no candidate
/// appears at all (a one-column file).
pub(crate) fn detect(sample: &str, complete: bool, fallback: u8) -> u8 {
    let mut counts: Vec<[u32; 4]> = Vec::new();
    let mut current = [0u32; 4];
    let mut in_quotes = false;
    let mut record_has_content = false;
    let bytes = sample.as_bytes();
    let mut i = 0;
    while i < bytes.len() && counts.len() < MAX_RECORDS {
        let b = bytes[i];
        if b == b'"' {
            in_quotes = !in_quotes;
            record_has_content = true;
        } else if !in_quotes && (b == b'\n' || b == b'\r') {
            if record_has_content {
                counts.push(current);
            }
            current = [0; 4];
            record_has_content = false;
        } else if !in_quotes {
            if let Some(k) = CANDIDATES.iter().position(|&c| c == b) {
                current[k] += 1;
            }
            record_has_content = true;
        }
        i += 1;
    }
    if complete && record_has_content && counts.len() < MAX_RECORDS {
        counts.push(current);
    }
    if counts.is_empty() && record_has_content {
        // A single record longer than the sample: count what we saw of it.
        counts.push(current);
    }

    let mut best: Option<(u64, u32, usize)> = None; // (consistency ‰, fields, candidate)
    let preferred = CANDIDATES.iter().position(|&c| c == fallback).unwrap_or(0);
    for k in order(preferred) {
        let (mode, freq) = mode_of(counts.iter().map(|c| c[k]));
        if mode == 0 {
            continue;
        }
        let consistency = freq as u64 * 1000 / counts.len() as u64;
        let better = match best {
            None => true,
            Some((c, m, _)) => consistency > c || (consistency == c && mode > m),
        };
        if better {
            best = Some((consistency, mode, k));
        }
    }
    best.map_or(fallback, |(_, _, k)| CANDIDATES[k])
}

/// Candidate indices, the preferred one first.
fn order(preferred: usize) -> impl Iterator<Item = usize> {
    std::iter::once(preferred).chain((0..CANDIDATES.len()).filter(move |&k| k != preferred))
}

/// The most frequent non-zero value and how often it occurs (larger value wins ties).
fn mode_of(values: impl Iterator<Item = u32>) -> (u32, usize) {
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
    best
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

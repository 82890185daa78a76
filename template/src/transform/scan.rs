//! White space found in a cell's bytes: the checks that find a clean cell clean for `trim` and
//! `collapse_spaces`, which every cell of a field with them pays for.

/// Whether `text` may have white space: some byte is ASCII white space or a control (below
/// `!`), or not ASCII. Read eight bytes at a time: most cells (numbers, dates, codes, e-mail
/// addresses) have none, and a byte loop over them was the transforms' largest cost.
#[inline(always)]
pub(super) fn has_white_space(text: &[u8]) -> bool {
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    const BANG: u64 = u64::from_ne_bytes([b'!'; 8]);
    let mut words = text.chunks_exact(8);
    // A byte below `!` borrows into its high bit when `!` is taken from it (a borrow can
    // only set another byte's bit after a byte that is below `!` itself), and a byte of 0x80
    // or more has that bit set already.
    let flagged = |w: u64| (w.wrapping_sub(BANG) | w) & HIGH != 0;
    for word in words.by_ref() {
        if flagged(u64::from_le_bytes(word.try_into().unwrap_or_default())) {
            return true;
        }
    }
    let rest = words.remainder();
    let mut last = [b'a'; 8];
    last[..rest.len()].copy_from_slice(rest);
    flagged(u64::from_le_bytes(last))
}

/// Whether `text` has white space other than single spaces: what `collapse_spaces` changes.
/// Every clean cell of a field with `collapse_spaces` is scanned, so it is scanned as bytes: a
/// character is decoded only at the lead bytes of the non-ASCII white space characters (U+0085,
/// U+00A0, U+1680, U+2000–U+205F, U+3000), not at every character of a name in kanji.
pub(super) fn has_space_run(text: &str) -> bool {
    let b = text.as_bytes();
    let mut previous = false;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        // Eight bytes without white space at once (`i` is always at a character's start).
        if b.get(i..i + 8).is_some_and(|w| !has_white_space(w)) {
            previous = false;
            i += 8;
            continue;
        }
        let (space, single, len) = match c {
            0..=0x7f => (ascii_space(c), c == b' ', 1),
            0xc2 | 0xe1 | 0xe2 | 0xe3 => {
                let ch = text.get(i..).and_then(|t| t.chars().next()).unwrap_or('\0');
                (ch.is_whitespace(), false, ch.len_utf8())
            }
            // Another character's lead byte (a kanji's is 0xe4 to 0xe9): not white space.
            0xc3..=0xdf => (false, false, 2),
            0xe4..=0xef => (false, false, 3),
            _ => (false, false, 4),
        };
        if space && (previous || !single) {
            return true;
        }
        previous = space;
        i += len;
    }
    false
}

/// Neither end of `text` is white space (`trim` leaves it), decoding at most one character at
/// each end.
pub(super) fn solid_ends(text: &str) -> bool {
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(&first), Some(&last)) if first < 0x80 && last < 0x80 => {
            !ascii_space(first) && !ascii_space(last)
        }
        (Some(_), Some(_)) => {
            !text.starts_with(char::is_whitespace) && !text.ends_with(char::is_whitespace)
        }
        _ => false,
    }
}

/// `char::is_whitespace` of an ASCII byte: space, and tab to carriage return.
fn ascii_space(c: u8) -> bool {
    c == b' ' || (b'\t'..=b'\r').contains(&c)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::cell::Cell;
    use crate::transform::{Applied, Buffers, Transform, Transforms};
    use crate::value::MissingValues;

    /// The characters' rule, which the byte scan of ASCII text must agree with.
    fn by_chars(text: &str) -> bool {
        let mut previous = false;
        text.chars().any(|c| {
            let space = c.is_whitespace();
            let run = space && (previous || c != ' ');
            previous = space;
            run
        })
    }

    #[test]
    fn text_is_scanned_as_the_characters_rule_says() {
        let mut texts = vec![
            String::new(),
            "a".into(),
            "a b c".into(),
            " a ".into(),
            "a  b".into(),
            "ab ".into(),
            "  ".into(),
        ];
        for b in 0u8..0x80 {
            let c = char::from(b);
            texts.push(format!("a{c}b"));
            texts.push(format!("{c}"));
            texts.push(format!("a {c}"));
        }
        for text in &texts {
            assert_eq!(has_space_run(text), by_chars(text), "{text:?}");
            let trimmed = text.trim().len() == text.len() && !text.is_empty();
            assert_eq!(solid_ends(text), trimmed, "{text:?}");
        }
        for text in [
            "東京\u{3000}都",
            "東京 都",
            "東京  都",
            "a\u{a0}b",
            "a \u{a0}b",
            "\u{85}",
            "x\u{2009}y",
            "x\u{205f}",
            "ひらがな カタカナ",
            "ひらがな\u{3000}\u{3000}",
            "é è",
            "\u{1680}",
        ] {
            assert_eq!(has_space_run(text), by_chars(text), "{text:?}");
            let trimmed = text.trim().len() == text.len() && !text.is_empty();
            assert_eq!(solid_ends(text), trimmed, "{text:?}");
        }
    }

    /// Texts of every length around a word's eight bytes, with white space of each kind at
    /// each place: what the word scans must get right.
    fn spaced_texts() -> Vec<String> {
        let mut texts = vec![String::new(), "東京都千代田区".into(), "C-00000001".into()];
        for len in 0..20 {
            let base: String = "abcdefghij東klmnopqrst".chars().take(len).collect();
            for space in [" ", "  ", "\t", "\u{3000}", "\u{a0}", "\u{1}"] {
                for at in 0..=base.chars().count() {
                    let (head, tail) =
                        base.split_at(base.char_indices().nth(at).map_or(base.len(), |(i, _)| i));
                    texts.push(format!("{head}{space}{tail}"));
                }
            }
            texts.push(base);
        }
        texts
    }

    #[test]
    fn a_word_scan_agrees_with_the_characters() {
        for text in spaced_texts() {
            assert_eq!(has_space_run(&text), by_chars(&text), "{text:?}");
            let white = text.chars().any(char::is_whitespace);
            assert!(has_white_space(text.as_bytes()) || !white, "{text:?}");
        }
    }

    /// `leave` says a cell is left only where `apply` leaves it, for every mix of the two
    /// clean-ups and with a missing value among the texts.
    #[test]
    fn a_cell_left_in_one_scan_is_one_the_transforms_leave() {
        let missing = MissingValues::new(&["".into(), " NA".into()]);
        let lists = [
            vec![Transform::Trim],
            vec![Transform::CollapseSpaces],
            vec![Transform::Trim, Transform::CollapseSpaces],
            vec![Transform::CollapseSpaces, Transform::Trim],
        ];
        let mut texts = spaced_texts();
        texts.extend([
            " NA".into(),
            "  ".into(),
            " a".into(),
            "a ".into(),
            "a\u{3000}".into(),
        ]);
        for list in lists {
            let transforms = Transforms::new(list);
            let mut left = 0;
            for text in &texts {
                let cell = Cell::Text(text);
                let applied = transforms.apply(cell, true, &missing, &mut Buffers::default());
                if transforms.leave(cell) {
                    left += 1;
                    assert_eq!(applied, Applied::Unchanged, "{text:?} {transforms:?}");
                }
            }
            // The texts without white space at least (and for `trim` alone, those with it inside).
            assert!(left >= 100, "{left} of {} left", texts.len());
        }
        let with_map =
            Transforms::new(vec![Transform::Trim, Transform::map(HashMap::new(), false)]);
        assert!(
            !with_map.leave(Cell::Text("a")),
            "only the clean-ups are decided in a scan"
        );
    }
}

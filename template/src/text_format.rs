//! The formats of a string field, as frictionless checks them through its libraries:
//!
//! - `email` is python-validators' `email`: one `@`; a local part of at most 64 characters,
//!   either dot-separated atoms of letters, digits, Latin-1/Latin Extended letters and
//!   ``!#$%&'*+/=?^_`{}|~-``, or a quoted string; a domain of at most 253 characters made of
//!   dot-separated labels (letters, digits, inner hyphens, at most 63 characters) whose last
//!   label ends with a letter. Difference: a non-ASCII domain is checked label by label with
//!   its letters taken as letters, instead of through IDNA encoding.
//! - `uri` is rfc3986's validator requiring a scheme, which is all frictionless asks: the text
//!   starts with `letter (letter | digit | + | - | .)* :` (so `mailto:x` and `urn:isbn:1` are
//!   URIs, and so is `C:\dir`, as in frictionless).
//! - `uuid` is Python's `UUID(text)`: 32 hexadecimal digits once a leading `urn:` and
//!   `uuid:`, braces around it and hyphens anywhere are taken away (Python takes `urn:` and
//!   `uuid:` away wherever they are).

codes::code_enum! {
    /// The string formats, by their names in a schema.
    pub(crate) enum StringFormat {
        Default => "default",
        Email => "email",
        Uri => "uri",
        Uuid => "uuid",
    }
}

impl StringFormat {
    #[inline]
    pub fn accepts(self, text: &str) -> bool {
        match self {
            StringFormat::Default => true,
            StringFormat::Email => is_email(text),
            StringFormat::Uri => is_uri(text),
            StringFormat::Uuid => is_uuid(text),
        }
    }
}

fn is_email(text: &str) -> bool {
    if let Some(valid) = ascii_email(text.as_bytes()) {
        return valid;
    }
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    is_email_by_chars(local, domain)
}

/// [`is_email`] character by character, for any text split at its first `@`.
pub(crate) fn is_email_by_chars(local: &str, domain: &str) -> bool {
    if domain.contains('@') {
        return false;
    }
    if local.starts_with('"') {
        return local.chars().count() <= 64 && is_quoted_local(local) && is_domain(domain.chars());
    }
    dot_atoms(local.chars()).is_some_and(|n| n <= 64) && is_domain(domain.chars())
}

/// ASCII bytes of a local part's atoms (letters, digits and ``!#$%&'*+/=?^_`{}|~-``).
const ATOM: u8 = 1;
/// ASCII letters and digits: a domain label's characters besides inner hyphens.
const LABEL: u8 = 2;

/// The classes of the ASCII bytes, as [`dot_atoms`] and [`is_domain`] read them.
const ASCII_CLASS: [u8; 128] = {
    let mut table = [0u8; 128];
    let specials = b"!#$%&'*+/=?^_`{}|~-";
    let mut i = 0;
    while i < specials.len() {
        table[specials[i] as usize] = ATOM;
        i += 1;
    }
    let mut b = 0;
    while b < 128 {
        if (b as u8).is_ascii_alphanumeric() {
            table[b] = ATOM | LABEL;
        }
        b += 1;
    }
    table
};

/// A character's [`ASCII_CLASS`]; none past ASCII.
fn class_of(c: char) -> u8 {
    usize::try_from(u32::from(c))
        .ok()
        .and_then(|i| ASCII_CLASS.get(i))
        .copied()
        .unwrap_or(0)
}

/// [`is_email`] for an address of ASCII characters (nearly every address), a table lookup a
/// byte; `None` when the characters decide (a quoted local part, a character past ASCII). The
/// character-by-character reading, with a string search per character, was 8 % of the
/// validating parse child's time on the bench's email column (`perf record`, 1M-row CSV); a
/// test compares the two readings.
pub(crate) fn ascii_email(b: &[u8]) -> Option<bool> {
    if b.first() == Some(&b'"') {
        return None;
    }
    let Some(at) = b.iter().position(|&c| c == b'@') else {
        return Some(false);
    };
    let (local, domain) = (&b[..at], &b[at + 1..]);
    // A wrong ASCII character is as wrong read as a character: such a `false` stands. Lengths
    // count characters, so they wait until every byte was ASCII.
    let mut after_dot = true;
    for &c in local {
        let class = *ASCII_CLASS.get(usize::from(c))?;
        if c == b'.' {
            if after_dot {
                return Some(false);
            }
            after_dot = true;
        } else if class & ATOM != 0 {
            after_dot = false;
        } else {
            return Some(false);
        }
    }
    if after_dot {
        return Some(false);
    }
    let (mut labels, mut len, mut last) = (0, 0, b'.');
    for &c in domain {
        let class = *ASCII_CLASS.get(usize::from(c))?;
        if c == b'.' {
            if len == 0 || len > 63 || last == b'-' {
                return Some(false);
            }
            labels += 1;
            len = 0;
        } else if class & LABEL != 0 || (c == b'-' && len > 0) {
            len += 1;
        } else {
            return Some(false);
        }
        last = c;
    }
    Some(
        local.len() <= 64
            && domain.len() <= 253
            && labels > 0
            && (2..=63).contains(&len)
            && last.is_ascii_alphabetic(),
    )
}

fn latin(c: char) -> bool {
    ('\u{00A0}'..='\u{024F}').contains(&c)
}

/// Dot-separated atoms of python-validators' local-part expression (matched regardless of
/// case); the number of characters.
fn dot_atoms(chars: impl Iterator<Item = char>) -> Option<usize> {
    let mut count = 0;
    let mut after_dot = true;
    for c in chars {
        count += 1;
        if c == '.' {
            if after_dot {
                return None;
            }
            after_dot = true;
        } else if latin(c) || class_of(c) & ATOM != 0 {
            after_dot = false;
        } else {
            return None;
        }
    }
    (!after_dot).then_some(count)
}

/// The quoted form of the local part: `"(latin | \x01-\x08 | \x0b | \x0c | \x0e-\x1f | ! |
/// #-[ | ]-\x7f | \\[\t.])*"`.
fn is_quoted_local(local: &str) -> bool {
    let Some(inner) = local.strip_prefix('"').and_then(|l| l.strip_suffix('"')) else {
        return false;
    };
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        let plain = latin(c)
            || matches!(c, '\u{01}'..='\u{08}' | '\u{0b}' | '\u{0c}' | '\u{0e}'..='\u{1f}')
            || matches!(c, '!' | '#'..='[' | ']'..='\u{7f}');
        if !plain && (c != '\\' || !chars.next().is_some_and(|e| e == '\t' || e == '.')) {
            return false;
        }
    }
    true
}

/// Python-validators' `domain`, in one pass: at most 253 characters of labels
/// `[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?` joined by dots, at least two, the last
/// `[a-z0-9][a-z0-9-]{0,61}[a-z]`; no whitespace.
fn is_domain(chars: impl Iterator<Item = char>) -> bool {
    let (mut count, mut labels, mut len, mut last) = (0, 0, 0, '.');
    for c in chars {
        count += 1;
        if c == '.' {
            if len == 0 || len > 63 || last == '-' {
                return false;
            }
            labels += 1;
            len = 0;
        } else if c.is_alphanumeric() || (c == '-' && len > 0) {
            len += 1;
        } else {
            return false;
        }
        last = c;
    }
    count <= 253 && labels > 0 && (2..=63).contains(&len) && last.is_alphabetic()
}

fn is_uri(text: &str) -> bool {
    let Some((scheme, _)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn is_uuid(text: &str) -> bool {
    let text = text.strip_prefix("urn:").unwrap_or(text);
    let text = text.strip_prefix("uuid:").unwrap_or(text);
    let text = text.trim_matches(|c| c == '{' || c == '}');
    let mut hex = 0;
    for c in text.chars() {
        match c {
            '-' => {}
            c if c.is_ascii_hexdigit() => hex += 1,
            _ => return false,
        }
    }
    hex == 32
}

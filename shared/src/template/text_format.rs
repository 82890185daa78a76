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

/// The string formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringFormat {
    Default,
    Email,
    Uri,
    Uuid,
}

impl StringFormat {
    pub fn from_name(name: &str) -> Option<StringFormat> {
        Some(match name {
            "default" => StringFormat::Default,
            "email" => StringFormat::Email,
            "uri" => StringFormat::Uri,
            "uuid" => StringFormat::Uuid,
            _ => return None,
        })
    }

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
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    // Lengths count characters; a text of no more bytes than the limit is within it.
    let within = |s: &str, max: usize| s.len() <= max || s.chars().count() <= max;
    !domain.contains('@')
        && within(local, 64)
        && within(domain, 253)
        && is_local_part(local)
        && is_domain(domain)
}

/// Python-validators' local-part expression, matched case-insensitively.
fn is_local_part(local: &str) -> bool {
    let latin = |c: char| ('\u{00A0}'..='\u{024F}').contains(&c);
    if let Some(inner) = local.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
        // `[latin \x01-\x08 \x0b \x0c \x0e-\x1f !#-\[ \]-\x7f] | \\[\t.]`
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            let plain = latin(c)
                || matches!(c, '\u{01}'..='\u{08}' | '\u{0b}' | '\u{0c}' | '\u{0e}'..='\u{1f}')
                || matches!(c, '!' | '#'..='[' | ']'..='\u{7f}');
            if plain {
                continue;
            }
            if c != '\\' || !chars.next().is_some_and(|e| e == '\t' || e == '.') {
                return false;
            }
        }
        return true;
    }
    // Dot-separated atoms, in one pass.
    let mut after_dot = true;
    for c in local.chars() {
        if c == '.' {
            if after_dot {
                return false;
            }
            after_dot = true;
        } else if c.is_ascii_alphanumeric() || latin(c) || "!#$%&'*+/=?^_`{}|~-".contains(c) {
            after_dot = false;
        } else {
            return false;
        }
    }
    !after_dot
}

/// Python-validators' `domain`: labels `[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?` joined by dots,
/// at least two, the last `[a-z0-9][a-z0-9-]{0,61}[a-z]`; no whitespace.
fn is_domain(domain: &str) -> bool {
    let Some((rest, last)) = domain.rsplit_once('.') else {
        return false;
    };
    rest.split('.').all(|l| label(l).is_some())
        && label(last).is_some_and(|(len, end)| len >= 2 && end.is_alphabetic())
}

/// A domain label's length and last character, if it is one: letters, digits and inner
/// hyphens, at most 63 characters.
fn label(label: &str) -> Option<(usize, char)> {
    let mut len = 0;
    let mut last = '-';
    for c in label.chars() {
        if !(c.is_alphanumeric() || (c == '-' && len > 0)) {
            return None;
        }
        len += 1;
        last = c;
    }
    ((1..=63).contains(&len) && last != '-').then_some((len, last))
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

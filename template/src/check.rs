//! A field's constraints other than `unique` (which spans rows: see `validate`), checked on a
//! cast value as frictionless checks them. `pattern` matches the whole value, with Rust's
//! linear-time `regex` (no backreferences or look-around: such patterns are template
//! problems).
//!
//! Deliberate differences from frictionless: a cell gets one constraint error, the first of
//! required, minLength, maxLength, minimum, maximum, pattern, enum that fails (frictionless
//! reports each); a pattern with a top-level `|` must match whole too (frictionless writes
//! `^a|b$`, which takes any text starting with `a`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use regex::{Regex, RegexBuilder};
use regex_automata::dfa::{dense, dense::DFA, Automaton, StartKind};
use regex_automata::{Anchored, Input};

use super::fingerprint::{Fingerprint, FingerprintSet};
use super::value::Value;
use super::Field;

codes::code_enum! {
    /// The constraints a `constraint-error` names.
    pub enum Constraint as "camelCase" {
        Required => "required",
        MinLength => "minLength",
        MaxLength => "maxLength",
        Minimum => "minimum",
        Maximum => "maximum",
        Pattern => "pattern",
        Enum => "enum",
    }
}

/// A field's compiled constraints (`required` and `unique` live on the field).
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub min_length: Option<usize>,
    pub max_length: Option<usize>,
    pub minimum: Option<Value<'static>>,
    pub maximum: Option<Value<'static>>,
    /// Shared by every field of the template with the same pattern.
    pub pattern: Option<Arc<CompiledPattern>>,
    pub enumeration: Option<Enumeration>,
}

impl Rules {
    /// Whether there is nothing to check beyond `required`.
    pub fn is_empty(&self) -> bool {
        self.min_length.is_none()
            && self.max_length.is_none()
            && self.minimum.is_none()
            && self.maximum.is_none()
            && self.pattern.is_none()
            && self.enumeration.is_none()
    }
}

pub(crate) struct CompiledPattern {
    /// The pattern anchored at both ends, as the regex and the DFA read it.
    anchored: String,
    /// As written in the schema, for messages.
    pub source: String,
    /// Its regex, built the first time a cell needs it: a template that is only checked (the
    /// api's `PUT`) builds none, so compiling it costs its patterns' syntax and size checks,
    /// not their programs. `None` would be a pattern the same parser accepted and whose
    /// program fit when it was checked but that the regex engine refused after all, which
    /// cannot happen; every cell would then fail the pattern, visibly in the error report.
    regex: OnceLock<Option<Regex>>,
    /// Its dense DFA, built the first time a cell is checked (never for a template that is
    /// only stored): `None` when it would be larger than [`PATTERN_DFA_BYTES`] or the pattern
    /// needs what a DFA cannot do (a Unicode word boundary); the regex then checks.
    pub(super) dfa: OnceLock<Option<DFA<Vec<u32>>>>,
}

/// The most a pattern's compiled program may take (checked when its template is compiled), and
/// its regex's lazy DFA's cache. Realistic patterns need a few kilobytes.
pub(crate) const PATTERN_SIZE_LIMIT: usize = 256 * 1024;
const PATTERN_DFA_LIMIT: usize = 256 * 1024;

/// The most memory one pattern's dense DFA may take: enough for the patterns of identifiers,
/// codes and postal codes templates hold (`C-[0-9]{8}` takes a few KiB), small enough that a
/// template of a thousand patterns adds at most 64 MiB to the parse child; a pattern whose DFA
/// would be larger (a Unicode class repeated) is checked by the regex.
const PATTERN_DFA_BYTES: usize = 64 << 10;

/// The pattern as written: a DFA's tables are no reading for a log or a test failure.
impl std::fmt::Debug for CompiledPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledPattern")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl CompiledPattern {
    /// `source`, already checked to be a valid pattern whose program fits
    /// ([`super::compile`]): nothing is built until a cell is checked.
    pub fn new(source: String) -> CompiledPattern {
        CompiledPattern {
            anchored: anchored(&source),
            source,
            regex: OnceLock::new(),
            dfa: OnceLock::new(),
        }
    }

    /// The regex, built on first use.
    pub(crate) fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| {
                // No program size limit of its own: the pattern's program was bounded when the
                // template was compiled, and an accepted pattern must not be refused here.
                RegexBuilder::new(&self.anchored)
                    .dfa_size_limit(PATTERN_DFA_LIMIT)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    /// Whether the whole of `text` matches. `Regex::is_match` sets up a search for each call
    /// (a cache from its pool, prefilters, the search loop's unrolling): on the ten-byte cells
    /// of the bench's `C-[0-9]{8}` that was about 500 instructions a cell (callgrind), several
    /// times what walking the DFA byte by byte takes. The same syntax and the same anchored
    /// pattern make the same language; a test compares the two.
    #[inline]
    pub fn is_match(&self, text: &str) -> bool {
        let dfa = self.dfa.get_or_init(|| {
            dense::Builder::new()
                .configure(
                    DFA::config()
                        .start_kind(StartKind::Anchored)
                        .dfa_size_limit(Some(PATTERN_DFA_BYTES))
                        .determinize_size_limit(Some(PATTERN_DFA_BYTES)),
                )
                .build(&self.anchored)
                .ok()
        });
        match dfa.as_ref().and_then(|dfa| walk(dfa, text.as_bytes())) {
            Some(matched) => matched,
            None => self.regex().is_some_and(|r| r.is_match(text)),
        }
    }
}

/// `source` anchored at both ends: the whole value must match, as frictionless anchors it.
pub(crate) fn anchored(source: &str) -> String {
    format!("^(?:{source})$")
}

/// Runs `dfa` over all of `text`; `None` if it cannot say (a quit state).
#[inline]
fn walk(dfa: &DFA<Vec<u32>>, text: &[u8]) -> Option<bool> {
    let mut state = dfa
        .start_state_forward(&Input::new(text).anchored(Anchored::Yes))
        .ok()?;
    for &b in text {
        state = dfa.next_state(state, b);
        if dfa.is_special_state(state) {
            if dfa.is_dead_state(state) {
                return Some(false);
            }
            if dfa.is_quit_state(state) {
                return None;
            }
        }
    }
    Some(dfa.is_match_state(dfa.next_eoi_state(state)))
}

#[derive(Debug)]
pub(crate) struct Enumeration {
    pub values: FingerprintSet,
    /// The values as text, in the schema's order: what a person picks from in a review.
    pub texts: Vec<String>,
    /// The first values, as a message shows them.
    pub shown: String,
}

/// At most this many characters of a value are quoted in a message or kept in an error record.
pub(crate) const SHOWN_CHARS: usize = 200;

/// `text` cut to [`SHOWN_CHARS`] characters, with `…` when cut.
pub(crate) fn clip(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
    }
}

/// A failed constraint, with what a person is told.
type Failure = (Constraint, String);

impl Field {
    /// Checks a cast value against the field's constraints except `unique`; the error names
    /// the constraint and says, for a person, what is wrong
    /// (`amount: "-5" is below the minimum 0`).
    #[inline]
    pub fn check(&self, value: &Value<'_>) -> Result<(), (Constraint, String)> {
        if matches!(value, Value::Null) {
            return if self.required {
                Err((
                    Constraint::Required,
                    format!("{}: a value is required", self.name),
                ))
            } else {
                Ok(())
            };
        }
        let shown = || clip(&value.to_string()).into_owned();
        if let Value::Text(text) = value {
            self.check_length(text.as_str(), &shown)?;
        }
        self.check_bounds(value, &shown)?;
        self.check_listed(value, &shown)
    }

    /// `minLength` and `maxLength`, in characters.
    #[inline]
    fn check_length(&self, text: &str, shown: &impl Fn() -> String) -> Result<(), Failure> {
        let name = &self.name;
        let rules = &self.rules;
        // A character takes one to four bytes, so most lengths are known without counting.
        if let Some(min) = rules.min_length {
            let short = text.len() < min
                || (text.len() < min.saturating_mul(4) && text.chars().count() < min);
            if short {
                let unit = plural(min, "character");
                return Err((
                    Constraint::MinLength,
                    format!("{name}: \"{}\" is shorter than {min} {unit}", shown()),
                ));
            }
        }
        if let Some(max) = rules.max_length {
            if text.len() > max && text.chars().count() > max {
                let unit = plural(max, "character");
                return Err((
                    Constraint::MaxLength,
                    format!("{name}: \"{}\" is longer than {max} {unit}", shown()),
                ));
            }
        }
        Ok(())
    }

    /// `minimum`, then `maximum`: a value that cannot be compared with a bound fails it.
    #[inline]
    fn check_bounds(&self, value: &Value<'_>, shown: &impl Fn() -> String) -> Result<(), Failure> {
        let rules = &self.rules;
        let minimum = (rules.minimum.as_ref(), Constraint::Minimum);
        self.check_bound(value, minimum, Ordering::is_ge, "below", shown)?;
        let maximum = (rules.maximum.as_ref(), Constraint::Maximum);
        self.check_bound(value, maximum, Ordering::is_le, "above", shown)
    }

    /// One bound, if the field has it: `value` must compare with it as `within` says, else it is
    /// `beyond` it (`"-5" is below the minimum 0`).
    #[inline]
    fn check_bound(
        &self,
        value: &Value<'_>,
        (bound, constraint): (Option<&Value<'static>>, Constraint),
        within: fn(Ordering) -> bool,
        beyond: &str,
        shown: &impl Fn() -> String,
    ) -> Result<(), Failure> {
        let Some(bound) = bound else {
            return Ok(());
        };
        let (name, kind) = (&self.name, constraint.as_str());
        match value.compare(bound) {
            Some(o) if within(o) => Ok(()),
            Some(_) => Err((
                constraint,
                format!("{name}: \"{}\" is {beyond} the {kind} {bound}", shown()),
            )),
            None => Err((
                constraint,
                format!(
                    "{name}: \"{}\" cannot be compared with the {kind} {bound}",
                    shown()
                ),
            )),
        }
    }

    /// `pattern` (text values only), then `enum`.
    #[inline]
    fn check_listed(&self, value: &Value<'_>, shown: &impl Fn() -> String) -> Result<(), Failure> {
        let name = &self.name;
        if let (Some(pattern), Value::Text(text)) = (&self.rules.pattern, value) {
            if !pattern.is_match(text.as_str()) {
                return Err((
                    Constraint::Pattern,
                    format!(
                        "{name}: \"{}\" does not match the pattern {}",
                        shown(),
                        pattern.source
                    ),
                ));
            }
        }
        if let Some(enumeration) = &self.rules.enumeration {
            let listed = value
                .fingerprint()
                .is_some_and(|f| enumeration.values.contains(&Fingerprint::from(f)));
            if !listed {
                return Err((
                    Constraint::Enum,
                    format!(
                        "{name}: \"{}\" is not one of {}",
                        shown(),
                        enumeration.shown
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn plural(n: usize, unit: &str) -> String {
    if n == 1 {
        unit.to_string()
    } else {
        format!("{unit}s")
    }
}

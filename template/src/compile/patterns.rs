//! The patterns of one template: each distinct pattern compiled once (a thousand fields with
//! the same pattern share one program), and all of them within one budget for the whole
//! template. Each pattern was bounded on its own ([`PATTERN_SIZE_LIMIT`]) but their sum was
//! not: 1,000 fields of `\w{4}` (a Unicode class, repeated) took 2–3 s of the api's CPU and
//! 250 MiB to compile, and the parse child 8.8 s and 365 MiB for every upload against it.
//!
//! The budget is in bytes of compiled program ([`TEMPLATE_PATTERN_BYTES`]), measured on the
//! Thompson NFA that the `regex` engine builds from the pattern: deterministic (the same
//! template is accepted or refused on every machine, unlike a time limit), and it bounds the
//! time too, since compiling is linear in what it builds. The NFA is built first, within what
//! is left of the budget, so a template past it is refused for the price of the budget, not of
//! its patterns.

use std::collections::HashMap;
use std::sync::Arc;

use regex_automata::nfa::thompson;

use super::super::check::{anchored, CompiledPattern, PATTERN_SIZE_LIMIT};

/// The most the distinct patterns of one template may take in total, compiled: room for a
/// thousand fields of distinct code and identifier patterns (`C-[0-9]{8}` takes under 1 KiB),
/// or for some 120 patterns of repeated Unicode classes (`\w{4}` takes 69 KiB).
pub const TEMPLATE_PATTERN_BYTES: usize = 8 << 20;

/// Why a pattern was not compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// Not a pattern this engine reads; the parser's reason.
    Invalid(String),
    /// Larger, compiled, than one pattern may be.
    TooLarge,
    /// It does not fit in what the template's other patterns left of the budget.
    OverBudget { spent: usize },
}

impl Refused {
    pub fn message(&self) -> String {
        match self {
            Refused::Invalid(reason) => format!("the pattern is not valid: {reason}"),
            Refused::TooLarge => format!(
                "the pattern is too large: it compiles to more than {PATTERN_SIZE_LIMIT} bytes"
            ),
            Refused::OverBudget { spent } => format!(
                "the template's patterns compile to more than {TEMPLATE_PATTERN_BYTES} bytes in \
                 all ({spent} before this one): use fewer distinct patterns, or ASCII classes \
                 such as [A-Za-z0-9_] instead of Unicode ones such as \\w"
            ),
        }
    }
}

/// The patterns compiled so far, and the bytes they took.
#[derive(Default)]
pub(super) struct Patterns {
    compiled: HashMap<String, Arc<CompiledPattern>>,
    spent: usize,
}

impl Patterns {
    /// The compiled `source` (anchored at both ends, as frictionless matches whole values):
    /// the one compiled before if the template has it already.
    pub fn compile(&mut self, source: &str) -> Result<Arc<CompiledPattern>, Refused> {
        if let Some(done) = self.compiled.get(source) {
            return Ok(Arc::clone(done));
        }
        let anchored = anchored(source);
        let left = TEMPLATE_PATTERN_BYTES.saturating_sub(self.spent);
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().nfa_size_limit(Some(left.min(PATTERN_SIZE_LIMIT))))
            .build(&anchored);
        match nfa {
            Ok(nfa) => self.spent += nfa.memory_usage(),
            Err(e) if e.size_limit().is_some() && left < PATTERN_SIZE_LIMIT => {
                return Err(Refused::OverBudget { spent: self.spent })
            }
            Err(e) if e.size_limit().is_some() => return Err(Refused::TooLarge),
            // Not a pattern: the `regex` parser (the same syntax) says why best.
            Err(e) => {
                return Err(Refused::Invalid(match regex::Regex::new(&anchored) {
                    Err(re) => last_line(&re.to_string()),
                    Ok(_) => e.to_string(),
                }))
            }
        }
        // The NFA was only measured; the programs that check cells are built when a cell is
        // checked ([`CompiledPattern`]), never for a template that is only stored.
        let compiled = Arc::new(CompiledPattern::new(source.to_owned()));
        self.compiled
            .insert(source.to_owned(), Arc::clone(&compiled));
        Ok(compiled)
    }
}

/// The parser's message shows our anchored copy; its last line says what is wrong.
fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(text)
        .to_owned()
}

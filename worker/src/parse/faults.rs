//! The errors one row of a hooked template's file has, by field and code: what the consumer
//! needs to take an error back when a hook writes a value into its cell, whatever the report's
//! cap kept of the records (the counts must stay exact). The parse child sends them with each
//! stored row ([`super::ParseEvent::Origin`]); the hooks' merge keeps them as it adds and takes
//! back errors, and the row is valid exactly when it has none.

use std::fmt;
use std::str::FromStr;

use anyhow::Context as _;
use template::validate::{ErrorCode, PRIMARY_KEY_SLOT};
use template::Template;

/// One error of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// The template field it is on (its index), `None` for a row's own (a blank row, a
    /// composite primary key, a cell beyond the header).
    pub field: Option<usize>,
    pub code: ErrorCode,
}

impl Fault {
    /// The fault of an error record named by field name, as the template indexes it.
    pub fn of(template: &Template, field: Option<&str>, code: ErrorCode) -> Self {
        Self {
            field: field.and_then(|name| template.field_index(name)),
            code,
        }
    }

    /// A uniqueness error (`unique-error` or `primary-key`): the file's other rows decide it.
    pub fn is_duplicate(self) -> bool {
        self.key_set().is_some()
    }

    /// The key set a uniqueness error is about, as the key index numbers them: a unique
    /// field's index, or [`PRIMARY_KEY_SLOT`].
    pub fn key_set(self) -> Option<i32> {
        match self.code {
            ErrorCode::PrimaryKey => Some(PRIMARY_KEY_SLOT),
            ErrorCode::UniqueError => self.field.and_then(|f| i32::try_from(f).ok()),
            _ => None,
        }
    }
}

/// A row's errors, in the order found. As text (in the child's frames and the row spool):
/// `-` for none, else `field:code` pairs separated by commas, `*` for no field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults(pub Vec<Fault>);

impl Faults {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a row with these errors may be stored, so the hooks are asked about it: every
    /// row with `keep_invalid_rows` (`keep_all`); else a valid one, or one whose only errors are
    /// duplicates ([`Fault::is_duplicate`]), which a hook that takes an earlier row's value away
    /// makes valid. The parse child sends such rows on, and the hooks' stages ask about them.
    pub fn may_be_stored(&self, keep_all: bool) -> bool {
        keep_all || self.0.iter().all(|f| f.is_duplicate())
    }
}

impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("-");
        }
        for (n, fault) in self.0.iter().enumerate() {
            let comma = if n > 0 { "," } else { "" };
            match fault.field {
                Some(field) => write!(f, "{comma}{field}:{}", fault.code)?,
                None => write!(f, "{comma}*:{}", fault.code)?,
            }
        }
        Ok(())
    }
}

impl FromStr for Faults {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Self> {
        if text == "-" {
            return Ok(Self::default());
        }
        text.split(',')
            .map(|pair| {
                let (field, code) = pair.split_once(':').context("a row's error")?;
                let field = match field {
                    "*" => None,
                    index => Some(index.parse().context("a row's error's field")?),
                };
                Ok(Fault {
                    field,
                    code: code.parse()?,
                })
            })
            .collect::<anyhow::Result<_>>()
            .map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_read_back_as_written() {
        for faults in [
            Faults::default(),
            Faults(vec![Fault {
                field: Some(3),
                code: ErrorCode::TypeError,
            }]),
            Faults(vec![
                Fault {
                    field: None,
                    code: ErrorCode::PrimaryKey,
                },
                Fault {
                    field: Some(0),
                    code: ErrorCode::HookError,
                },
            ]),
        ] {
            let text = faults.to_string();
            assert_eq!(text.parse::<Faults>().unwrap(), faults, "{text}");
        }
        assert!("1:nope".parse::<Faults>().is_err());
        assert!("x:type-error".parse::<Faults>().is_err());
    }
}

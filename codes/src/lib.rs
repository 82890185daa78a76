//! One way to declare a vocabulary of machine codes: the task error codes, the api's error
//! codes, statuses, event types, the validation report's codes and constraints, metric kinds.
//! Each variant is written once with its text, and the enum gets every code in order (`ALL`,
//! which tests hold equal to the documentation's tables), its text (`as_str`, also its serde
//! name), `Display` and `FromStr`, which refuses any other text ([`UnknownCode`], naming it)
//! rather than guessing a default.
//!
//! A crate of its own so the `template` engine (pure code) and `shared` (the database and
//! storage edge) declare theirs the same way without one depending on the other. Why not
//! `strum`: its derives name the variants by a case rule of their own beside serde's, two
//! spellings a test would have to hold equal; here each text is written once, and the enum's
//! serde case is stated beside it (a declaring module's test checks the two agree).

/// A text that is not one of a vocabulary's codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {vocabulary} {text:?}")]
pub struct UnknownCode {
    /// The vocabulary's type name, e.g. `TaskErrorCode`.
    pub vocabulary: &'static str,
    pub text: String,
}

/// Declares `enum $name` with `ALL`, `as_str`, `Display`, `FromStr`, `Hash` and serde. The
/// variants' texts are snake_case, as `#[serde(rename_all = "snake_case")]` names them, unless
/// the enum says its case (`pub enum Code as "kebab-case" { … }`); a variant spelled otherwise
/// carries its own `#[serde(rename = …)]`, as the event types do. The caller's crate needs
/// `serde`.
#[macro_export]
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $case:tt {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal,)*
        }
    ) => {
        $crate::code_enum! {
            @declare $case;
            $(#[$meta])*
            $vis enum $name {
                $($(#[$vmeta])* $variant => $text,)*
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal,)*
        }
    ) => {
        $crate::code_enum! {
            @declare "snake_case";
            $(#[$meta])*
            $vis enum $name {
                $($(#[$vmeta])* $variant => $text,)*
            }
        }
    };
    // `$case` travels as a `tt`: a `literal` fragment reaches derives (utoipa's) wrapped, and
    // they would not read the enum's `rename_all`.
    (
        @declare $case:tt;
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(rename_all = $case)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every code, in the order of its documentation's table.
            pub const ALL: &[$name] = &[$($name::$variant,)*];

            /// The code's text, e.g. `"not_found"`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::UnknownCode;

            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|c| c.as_str() == s)
                    .ok_or_else(|| $crate::UnknownCode {
                        vocabulary: stringify!($name),
                        text: s.to_owned(),
                    })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    crate::code_enum! {
        enum Snake {
            OneWord => "one_word",
        }
    }

    crate::code_enum! {
        enum Kebab as "kebab-case" {
            TypeError => "type-error",
            PrimaryKey => "primary-key",
        }
    }

    #[test]
    fn text_serde_and_parse_agree() {
        for &k in Kebab::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            assert_eq!(k.as_str().parse::<Kebab>(), Ok(k));
        }
        assert_eq!(serde_json::to_value(Snake::OneWord).unwrap(), "one_word");
        assert_eq!(Snake::OneWord.to_string(), "one_word");
    }

    #[test]
    fn an_unknown_text_is_refused_by_name() {
        let err = "type_error".parse::<Kebab>().unwrap_err();
        assert_eq!(err.to_string(), r#"unknown Kebab "type_error""#);
    }
}

//! One way to declare a vocabulary of machine codes — the task error codes here, the api's error
//! codes there: each variant is written once with its text, and the enum gets every code in
//! order (`ALL`, which the tests hold equal to the documentation's tables), its text (`as_str`,
//! also its serde name), `Display` and `FromStr`, which refuses any other text
//! ([`UnknownCode`]) rather than guessing a default.

/// A text that is not one of a vocabulary's codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {vocabulary} {text:?}")]
pub struct UnknownCode {
    /// The vocabulary's type name, e.g. `TaskErrorCode`.
    pub vocabulary: &'static str,
    pub text: String,
}

/// Declares `enum $name` with `ALL`, `as_str`, `Display` and `FromStr`. The variants' texts are
/// snake_case, as `#[serde(rename_all = "snake_case")]` names them, so the JSON and the text
/// agree (each declaring module has a test for that); a variant spelled otherwise carries its
/// own `#[serde(rename = …)]`, as the event types do. The caller's crate needs `serde`.
#[macro_export]
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
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
            type Err = $crate::codes::UnknownCode;

            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|c| c.as_str() == s)
                    .ok_or_else(|| $crate::codes::UnknownCode {
                        vocabulary: stringify!($name),
                        text: s.to_owned(),
                    })
            }
        }
    };
}

/// Stores a vocabulary in a `text` column through its `as_str` and `FromStr`: a stored text
/// that is not one of its values fails the row's decoding, loudly, instead of becoming a
/// default somewhere downstream. For columns kept as `text` with a CHECK constraint (a
/// Postgres enum type would need a migration and would change what the events trigger sees).
#[macro_export]
macro_rules! text_column {
    ($name:ty) => {
        impl ::sqlx::Type<::sqlx::Postgres> for $name {
            fn type_info() -> ::sqlx::postgres::PgTypeInfo {
                <str as ::sqlx::Type<::sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &::sqlx::postgres::PgTypeInfo) -> bool {
                <str as ::sqlx::Type<::sqlx::Postgres>>::compatible(ty)
            }
        }

        impl<'r> ::sqlx::Decode<'r, ::sqlx::Postgres> for $name {
            fn decode(
                value: ::sqlx::postgres::PgValueRef<'r>,
            ) -> ::std::result::Result<Self, ::sqlx::error::BoxDynError> {
                let text = <&str as ::sqlx::Decode<'r, ::sqlx::Postgres>>::decode(value)?;
                Ok(text.parse::<$name>()?)
            }
        }

        impl ::sqlx::Encode<'_, ::sqlx::Postgres> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut ::sqlx::postgres::PgArgumentBuffer,
            ) -> ::std::result::Result<::sqlx::encode::IsNull, ::sqlx::error::BoxDynError> {
                <&str as ::sqlx::Encode<'_, ::sqlx::Postgres>>::encode_by_ref(&self.as_str(), buf)
            }
        }
    };
}

//! Vocabularies at the database edge: [`code_enum!`](::codes::code_enum) (from the `codes`
//! crate, re-exported as `shared::code_enum!`) and [`text_column!`], which stores
//! one in a `text` column and refuses a stored text that is not one of its codes.

pub use ::codes::UnknownCode;

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

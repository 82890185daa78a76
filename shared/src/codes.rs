//! One way to declare a vocabulary of machine codes — the task error codes here, the api's error
//! codes there: each variant is written once with its text, and the enum gets every code in
//! order (`ALL`, which the tests hold equal to the documentation's tables), its text (`as_str`,
//! also its serde name) and `Display`.

/// Declares `enum $name` with `ALL`, `as_str` and `Display`. The variants' texts are snake_case,
/// as `#[serde(rename_all = "snake_case")]` names them, so the JSON and the text agree (each
/// declaring module has a test for that). The caller's crate needs `serde`.
#[macro_export]
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[doc = $doc:literal])* $variant:ident => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
        $vis enum $name {
            $($(#[doc = $doc])* $variant,)*
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
    };
}

//! What a destination request must be before anything is stored: every problem found at once,
//! each with its JSON pointer (`422 invalid_destination`), after the URL rules that webhooks
//! follow (`422 unsafe_url`). The container URL and credential are checked by
//! [`shared::storage::external`]. Blob sources check their container, prefix and credential
//! here too.

use shared::storage::external::{ExternalContainer, GivenCredential};
use template::Problem;

use crate::error::{ApiError, ApiErrorCode};
use crate::routes::webhooks::checked_url;
use crate::state::AppState;

const MAX_PREFIX: usize = 512;
const MAX_TEMPLATES: usize = 100;
pub const DEFAULT_CHUNK_SIZE: i32 = 1000;
const FORMATS: [&str; 3] = ["parquet", "csv", "ndjson"];

/// Problems gathered while checking one request, and the error they make (`422` with every
/// problem in `details`).
pub struct Problems(Vec<Problem>, fn(Vec<Problem>) -> ApiError);

impl Default for Problems {
    /// A destination's: `422 invalid_destination`.
    fn default() -> Self {
        Self(Vec::new(), ApiError::InvalidDestination)
    }
}

impl Problems {
    /// A Blob source's: `422 invalid_source`.
    pub fn for_source() -> Self {
        Self(Vec::new(), ApiError::InvalidSource)
    }

    pub fn add(&mut self, pointer: &str, message: impl Into<String>) {
        self.0.push(Problem {
            pointer: pointer.to_owned(),
            message: message.into(),
        });
    }

    /// The `422` with every problem, or nothing wrong.
    pub fn done(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err((self.1)(self.0))
        }
    }
}

/// A prefix: at most [`MAX_PREFIX`] bytes, no leading `/`, no `..` segment, ending with `/`
/// unless empty (so `<prefix><template>` is a folder).
pub fn prefix(p: &mut Problems, prefix: Option<&str>) -> String {
    let prefix = prefix.unwrap_or_default();
    let bad = prefix.len() > MAX_PREFIX
        || prefix.starts_with('/')
        || prefix.split('/').any(|s| s == ".." || s == ".")
        || prefix.chars().any(|c| c.is_control() || c == '\\')
        || (!prefix.is_empty() && !prefix.ends_with('/'));
    if bad {
        p.add(
            "/prefix",
            format!(
                "a prefix is a path of at most {MAX_PREFIX} bytes ending with `/`, without a \
                 leading `/` or `.`/`..` segments"
            ),
        );
    }
    prefix.to_owned()
}

pub fn format(p: &mut Problems, format: Option<&str>) -> String {
    let format = format.unwrap_or("parquet");
    if !FORMATS.contains(&format) {
        p.add("/format", "format is `parquet`, `csv` or `ndjson`");
    }
    format.to_owned()
}

pub fn chunk_size(p: &mut Problems, size: Option<i32>) -> i32 {
    let size = size.unwrap_or(DEFAULT_CHUNK_SIZE);
    if !(1..=10_000).contains(&size) {
        p.add("/chunk_size", "chunk_size is 1 to 10000 rows");
    }
    size
}

/// A template filter: 1 to [`MAX_TEMPLATES`] names, each once.
pub fn templates(p: &mut Problems, templates: Option<&[String]>) -> Option<Vec<String>> {
    let list = templates?;
    if list.is_empty() || list.len() > MAX_TEMPLATES {
        p.add(
            "/templates",
            format!("templates names 1 to {MAX_TEMPLATES} templates (or is left out for all)"),
        );
    }
    for (i, name) in list.iter().enumerate() {
        if name.is_empty() || name.len() > 200 {
            p.add(
                &format!("/templates/{i}"),
                "a template name is 1 to 200 bytes",
            );
        }
    }
    let mut names = list.to_vec();
    names.sort();
    names.dedup();
    Some(names)
}

/// The container: `unsafe_url` first (as a webhook URL), then its shape and credential.
pub async fn container(
    state: &AppState,
    p: &mut Problems,
    url: &str,
    credential: GivenCredential,
) -> Result<Option<ExternalContainer>, ApiError> {
    let url = checked_url(state, url).await?;
    let credential = match credential.0 {
        Ok(credential) => credential,
        Err(problem) => {
            p.add("/credential", problem);
            return Ok(None);
        }
    };
    let allow_private = state.webhooks.keys.allow_private_networks;
    match ExternalContainer::parse(&url, credential, allow_private) {
        Ok(c) => Ok(Some(c)),
        Err(e) if e.unsafe_url => Err(ApiError::unprocessable(ApiErrorCode::UnsafeUrl, e.message)),
        Err(e) => {
            p.add(&format!("/{}", e.field), e.message);
            Ok(None)
        }
    }
}

//! What the consumer asks of a templated parse ([`TemplateJob`]): it travels to the parse child
//! with the file, so it is a wire type of its own, read by the validation ([`super::validate`])
//! and by the mapping review ([`super::review`]) alike.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shared::domain::review::{ConfirmedMapping, RememberedMapping};
use shared::domain::OnInvalid;

/// What the parent asks for with a file: the template version's schema and how to apply it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateJob {
    /// The Frictionless Table Schema document, as stored.
    pub schema: serde_json::Value,
    /// The workbook sheet to validate (a name or a glob); `None` for the first.
    pub sheet: Option<String>,
    pub on_invalid: OnInvalid,
    /// How many error records (and rejected rows) to send at most.
    pub max_errors: u32,
    /// The mapping a person confirmed in this task's review: used instead of matching, on
    /// the sheet the review was about (`confirmed_sheet`).
    #[serde(default)]
    pub confirmed: Option<ConfirmedMapping>,
    #[serde(default)]
    pub confirmed_sheet: Option<String>,
    /// Mappings confirmed for this template on earlier files, by the key of their header set
    /// ([`shared::domain::review::header_key`]): a file with one of those header sets is
    /// mapped the same way, without a review.
    #[serde(default)]
    pub remembered: BTreeMap<String, RememberedMapping>,
    /// (header text, field name) pairs people confirmed for this template (contract v1.3): a
    /// column headed by one maps to its field with `"match": "learned"`.
    #[serde(default)]
    pub learned: Vec<(String, String)>,
    /// Texts people mapped to an `enum` or `boolean` field's values in reviews of this
    /// template (contract v1.3), applied after the field's own transforms.
    #[serde(default)]
    pub values: template::ValueMaps,
    /// The template has validation hooks: each stored row is preceded by its
    /// [`crate::parse::ParseEvent::Origin`], for the consumer to ask the hooks about it.
    #[serde(default)]
    pub hooked: bool,
}

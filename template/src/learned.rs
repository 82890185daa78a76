//! Value mapping learned in review (contract v1.3, "Transforms and validation hooks"): while a
//! task waits for a person, an `enum` or `boolean` field's sampled texts that it cannot read are
//! shown with the values it allows ([`Field::allowed_values`], [`Field::reads`]); what the
//! person maps (`Y` → `true`, `Calif.` → `CA`) is remembered for the tenant's template and
//! added to the field here ([`Template::learn_values`]) as one more `map` transform, after the
//! template's own, so the next file with those texts is read without a review.

use std::collections::{BTreeMap, HashMap};

use super::cast::Syntax;
use super::transform::{Transform, Transforms};
use super::{Field, Template};

/// A person's value maps for a template: field name → (text → allowed value).
pub type ValueMaps = BTreeMap<String, BTreeMap<String, String>>;

impl Field {
    /// The values a person may map a text to: a `boolean` field's true and false values, an
    /// `enum` field's values (as text, in the schema's order); `None` for any other field,
    /// whose texts are not mapped in review.
    pub fn allowed_values(&self) -> Option<Vec<String>> {
        if let Some(enumeration) = &self.rules.enumeration {
            return Some(enumeration.texts.clone());
        }
        match &self.syntax {
            Syntax::Boolean {
                true_values,
                false_values,
            } => Some(true_values.iter().chain(false_values).cloned().collect()),
            _ => None,
        }
    }

    /// Whether the field reads `text` as one of its values after its transforms (its type,
    /// format, `pattern` and `enum`), or as no value (one of its missing values). A text it
    /// does not read is what a review asks about.
    pub fn reads(&self, text: &str) -> bool {
        self.missing_values.contains(text) || super::validate::mapping::values::fits(self, text)
    }
}

impl Template {
    /// Adds `maps` to the fields they name (a name the template no longer has is passed over,
    /// as a field may be removed in a later version), each as a `map` transform after the
    /// field's own.
    pub fn learn_values(&mut self, maps: &ValueMaps) {
        for (name, map) in maps {
            let Some(field) = self.fields.iter_mut().find(|f| &f.name == name) else {
                continue;
            };
            if map.is_empty() {
                continue;
            }
            let table: HashMap<String, String> =
                map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let map = Transform::map(table, false);
            match &mut field.transforms {
                Some(transforms) => transforms.push(map),
                None => field.transforms = Some(Transforms::new(vec![map])),
            }
        }
    }
}

//! The formats an upload may be, each read its own way until its cells are decoded: what the
//! bytes say the file is ([`sniff`]), CSV/TSV with its encoding and dialect ([`csv`],
//! [`encoding`], [`delimiter`]), and workbooks through calamine ([`excel`], with how its cells
//! and errors are turned into ours). What every format shares after that is the table
//! ([`super::table`]).

pub mod csv;
pub(super) mod delimiter;
pub(super) mod encoding;
pub(super) mod excel;
pub(super) mod excel_error;
pub(super) mod excel_value;
pub(super) mod sniff;

use shared::domain::layout_override::{ForcedEnd, ForcedHeader, LayoutOverride};

use super::table::header::{HeaderPhase, Headerless};
use super::table::sheet::SheetBuilder;
use super::template::validate::Validation;
use super::ParseLimits;

/// What every reader is given besides the file: the limits, a template's validation, and
/// where a person said the tables lie.
pub(crate) struct Reading<'l, 's, 'v> {
    pub limits: &'l ParseLimits,
    pub validation: Option<&'s mut Validation<'v>>,
    pub layout: &'l LayoutOverride,
}

/// The header phase and the table's end of sheet `index`: detected, unless `layout` forces
/// them. Every reader starts each sheet through here, so an override reaches them all.
pub(crate) fn start_sheet<T>(
    layout: &LayoutOverride,
    index: u32,
    headerless: Headerless,
    sheet: &mut SheetBuilder,
) -> HeaderPhase<T> {
    let forced = layout.sheet(index);
    sheet.force_end(forced.map_or(ForcedEnd::Detect, |f| f.end()));
    HeaderPhase::new(headerless).forced(forced.map_or(ForcedHeader::Detect, |f| f.header()))
}

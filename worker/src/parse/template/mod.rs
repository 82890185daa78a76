//! An upload with an import template: what the consumer asks for ([`job`]), the validation of
//! each row as it is parsed ([`validate`]), and the mapping review when a person must confirm
//! which column is which field ([`review`]).

pub(super) mod job;
pub(super) mod review;
pub mod validate;

pub(crate) use validate::report_record;

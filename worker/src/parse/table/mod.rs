//! What every format shares once its cells are decoded: where the table's header is
//! ([`header`]), where every record of the sheet went ([`layout`]), the sheet's columns, limits
//! and types ([`sheet`]), and the steps every reader takes with them ([`driver`]).

pub(super) mod driver;
pub(super) mod header;
pub(super) mod layout;
pub(super) mod sheet;

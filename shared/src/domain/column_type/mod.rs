//! The type of a parsed column, and the rules that decide it. The worker infers a CSV column's
//! type with [`TypeSet::narrow`] while it streams the file and stores every CSV cell as the original
//! string; the API turns those strings into typed JSON at read time with [`render`]. Keeping the
//! recognisers ([`recognise`]) and the renderer ([`render`](mod@render)) in one module guarantees
//! that a column typed `integer` always renders as numbers. Excel cells arrive already typed, so
//! `render` leaves non-strings alone.

mod recognise;
mod render;
#[cfg(test)]
mod tests;

use recognise::{bool_value, date_fields, datetime_fields, number_kind};
pub use recognise::{
    datetime_micros, parse_bool, parse_date, parse_datetime, parse_decimal, parse_integer,
};
pub use render::{render, render_str, IsoText, Rendered};

crate::code_enum! {
    /// The inferred type of one column of a sheet.
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum ColumnType {
        Integer => "integer",
        Decimal => "decimal",
        Boolean => "boolean",
        Date => "date",
        DateTime => "date_time",
        Text => "text",
        /// Excel only: the cells of the column carry different types (numbers and text, …).
        Mixed => "mixed",
    }
}

bitflags::bitflags! {
    /// The set of column types one value (or every value of a column so far) is compatible
    /// with. Integers are also decimals and dates are also datetimes, so a column of `1` and
    /// `1.5` is a decimal column and a column of dates and datetimes is a datetime column.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct TypeSet: u8 {
        const INTEGER = 1;
        const DECIMAL = 2;
        const BOOLEAN = 4;
        const DATE = 8;
        const DATETIME = 16;
    }
}

impl TypeSet {
    /// Every type still possible: the state of a column before its first non-empty value.
    pub const ANY: TypeSet = TypeSet::all();
    /// Nothing but text.
    pub const TEXT: TypeSet = TypeSet::empty();

    /// `self` narrowed to the types the non-empty CSV value `value` also fits, testing `value`
    /// only against the types still in `self`: once a column is known to hold dates, its values
    /// are only ever checked as dates. This runs on every non-empty CSV cell, so it is the cost
    /// of type inference; it works on bytes (every type is ASCII, so invalid UTF-8 fits none)
    /// and decides each family in one pass without building the value.
    #[inline]
    pub fn narrow(self, value: &[u8]) -> TypeSet {
        const NUMBER: TypeSet = TypeSet::INTEGER.union(TypeSet::DECIMAL);
        const DATES: TypeSet = TypeSet::DATE.union(TypeSet::DATETIME);
        // The families are disjoint (no string is both a number and a date, …), so each is
        // tested on its own.
        let mut fits = TypeSet::empty();
        if self.intersects(NUMBER) {
            fits |= number_kind(value);
        }
        if self.contains(Self::BOOLEAN) && bool_value(value).is_some() {
            fits |= Self::BOOLEAN;
        }
        if self.intersects(DATES) {
            if date_fields(value).is_some() {
                fits |= DATES;
            } else if self.contains(Self::DATETIME) && datetime_fields(value).is_some() {
                fits |= Self::DATETIME;
            }
        }
        self & fits
    }

    pub fn intersect(self, other: TypeSet) -> TypeSet {
        self & other
    }

    pub fn is_text(self) -> bool {
        self.is_empty()
    }

    /// The narrowest column type left. `seen_values` is false for a column with no non-empty
    /// value at all, which is reported as text.
    pub fn column_type(self, seen_values: bool) -> ColumnType {
        if !seen_values || self.is_empty() {
            ColumnType::Text
        } else if self.contains(Self::INTEGER) {
            ColumnType::Integer
        } else if self.contains(Self::DECIMAL) {
            ColumnType::Decimal
        } else if self.contains(Self::BOOLEAN) {
            ColumnType::Boolean
        } else if self.contains(Self::DATE) {
            ColumnType::Date
        } else {
            ColumnType::DateTime
        }
    }
}

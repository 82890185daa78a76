//! The column type rules against oracles written the long way: every state of a column narrowed
//! by sample values, numbers against a separately written parser on generated strings, dates
//! and times against chrono byte by byte, and rendering.

use chrono::{NaiveDate, NaiveTime};
use serde_json::{json, Value};

use super::recognise::{bool_value, date_fields, number_kind, time_fields};
use super::*;

/// The types `s` fits by the parsers `render` uses: what inference must agree with.
fn of(s: &str) -> TypeSet {
    let mut bits = TypeSet::empty();
    if parse_integer(s).is_some() {
        bits |= TypeSet::INTEGER | TypeSet::DECIMAL;
    }
    if parse_decimal(s).is_some_and(f64::is_finite) {
        bits |= TypeSet::DECIMAL;
    }
    if parse_bool(s).is_some() {
        bits |= TypeSet::BOOLEAN;
    }
    if parse_date(s).is_some() {
        bits |= TypeSet::DATE | TypeSet::DATETIME;
    }
    if parse_datetime(s).is_some() {
        bits |= TypeSet::DATETIME;
    }
    bits
}

fn column(values: &[&str]) -> ColumnType {
    let set = values
        .iter()
        .fold(TypeSet::ANY, |acc, v| acc.intersect(of(v)));
    set.column_type(!values.is_empty())
}

#[test]
fn columns_are_typed_only_when_every_value_fits() {
    assert_eq!(column(&["1", "-42", "+7"]), ColumnType::Integer);
    assert_eq!(column(&["1", "2.5", "1e3"]), ColumnType::Decimal);
    assert_eq!(column(&["TRUE", "false"]), ColumnType::Boolean);
    assert_eq!(column(&["2024-01-31", "2024/02/29"]), ColumnType::Date);
    assert_eq!(
        column(&["2024-01-31", "2024-01-31 09:05"]),
        ColumnType::DateTime
    );
    assert_eq!(column(&["1", "x"]), ColumnType::Text);
    assert_eq!(column(&[]), ColumnType::Text);
}

#[test]
fn narrowing_agrees_with_intersecting_for_every_column_state() {
    let samples = [
        "1",
        "-42",
        "+7",
        "0",
        "00123",
        "9223372036854775807",
        "9223372036854775808",
        "12345678901234567890",
        "2.5",
        "1e3",
        "1e999",
        "01.5",
        ".5",
        "TRUE",
        "false",
        "yes",
        "2024-01-31",
        "2024/02/29",
        "2024-02-30",
        "2024-01-31 09:05",
        "2024-01-31T09:05:00Z",
        "2024-01-31 25:00",
        "090-1234-5678",
        "x",
        "東京",
        "-",
        "+",
    ];
    for bits in 0..=31u8 {
        let set = TypeSet::from_bits_retain(bits);
        for s in samples {
            assert_eq!(
                set.narrow(s.as_bytes()),
                set.intersect(of(s)),
                "{bits:05b} {s:?}"
            );
        }
    }
    assert_eq!(
        parse_integer("-123456789012345678"),
        Some(-123_456_789_012_345_678)
    );
    assert_eq!(parse_integer("9223372036854775807"), Some(i64::MAX));
    assert_eq!(parse_integer("9223372036854775808"), None);
}

/// The number rules restated the long way (split at the exponent, then at the point), as
/// an oracle for the one-pass [`number_kind`].
fn number_oracle(s: &str) -> TypeSet {
    let all_digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if all_digits(body) && !(body.len() > 1 && body.starts_with('0')) {
        return if s.parse::<i64>().is_ok() {
            TypeSet::INTEGER | TypeSet::DECIMAL
        } else {
            TypeSet::empty()
        };
    }
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let ok = all_digits(int)
        && !(int.len() > 1 && int.starts_with('0'))
        && frac.is_none_or(all_digits)
        && exponent.is_none_or(|e| all_digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
        && (frac.is_some() || exponent.is_some())
        && int.len() + frac.map_or(0, str::len) <= 17
        && s.parse::<f64>().is_ok_and(f64::is_finite);
    if ok {
        TypeSet::DECIMAL
    } else {
        TypeSet::empty()
    }
}

#[test]
fn numbers_are_recognised_as_the_oracle_says_on_generated_strings() {
    use rand::{Rng, SeedableRng};
    const ALPHABET: &[u8] = b"0123456789+-.eE";
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    for _ in 0..200_000 {
        let len = rng.random_range(0..24);
        let s: String = (0..len)
            .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
            .collect();
        assert_eq!(number_kind(s.as_bytes()), number_oracle(&s), "{s:?}");
    }
    for s in [
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "1e308",
        "1e309",
        "12345678901234567.5",
        "1234567890123456.5",
    ] {
        assert_eq!(number_kind(s.as_bytes()), number_oracle(s), "{s:?}");
    }
}

/// The value of `b[r]` when it is all ASCII digits, byte by byte.
fn digits_at(b: &[u8], r: std::ops::Range<usize>) -> Option<u32> {
    b[r].iter().try_fold(0u32, |n, c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

/// What the word-at-a-time recognisers must agree with, written byte by byte.
fn date_oracle(b: &[u8]) -> Option<(i32, u32, u32)> {
    if b.len() != 10 || b[4] != b[7] || !matches!(b[4], b'-' | b'/') {
        return None;
    }
    let (y, m, d) = (
        digits_at(b, 0..4)?,
        digits_at(b, 5..7)?,
        digits_at(b, 8..10)?,
    );
    NaiveDate::from_ymd_opt(y as i32, m, d).map(|_| (y as i32, m, d))
}

fn time_oracle(b: &[u8]) -> Option<(u32, u32, u32, u32)> {
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, s) = (
        digits_at(b, 0..2)?,
        digits_at(b, 3..5)?,
        digits_at(b, 6..8)?,
    );
    NaiveTime::from_hms_opt(h, m, s).map(|_| (h, m, s, 0))
}

/// `base` with every byte value at every position, and with a high byte (whose carry a
/// word check must not let through) next to each of those on either side.
fn mutations(base: &str) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    let len = base.len();
    for i in 0..len {
        for v in 0..=255u8 {
            let mut b = base.as_bytes().to_vec();
            b[i] = v;
            all.push(b.clone());
            if i + 1 < len {
                for w in [0x8a, 0xc0, 0xff] {
                    b[i + 1] = w;
                    all.push(b.clone());
                    b.swap(i, i + 1);
                    all.push(b.clone());
                    b.swap(i, i + 1);
                }
            }
        }
    }
    all
}

#[test]
fn every_byte_at_every_position_of_a_date_or_time_is_judged_as_byte_by_byte() {
    for base in ["2024-02-29", "1999/12/31", "0000-01-01"] {
        for b in mutations(base) {
            assert_eq!(date_fields(&b), date_oracle(&b), "{b:?}");
        }
    }
    for base in ["23:59:59", "00:00:00", "09:05:30"] {
        for b in mutations(base) {
            assert_eq!(time_fields(&b), time_oracle(&b), "{b:?}");
        }
    }
    for text in ["true", "TRUE", "True", "false", "FALSE", "fAlSe"] {
        assert_eq!(bool_value(text.as_bytes()), Some(text.len() == 4));
    }
    for v in 0..=255u8 {
        for i in 0..5 {
            let mut b = *b"false";
            b[i] = v;
            let expected = b.eq_ignore_ascii_case(b"false").then_some(false);
            assert_eq!(bool_value(&b), expected, "{b:?}");
            if i < 4 {
                let mut t = *b"true";
                t[i] = v;
                let expected = t.eq_ignore_ascii_case(b"true").then_some(true);
                assert_eq!(bool_value(&t), expected, "{t:?}");
            }
        }
    }
}

#[test]
fn dates_and_times_are_those_chrono_accepts() {
    for year in [0, 1, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9999] {
        for month in 0..=13 {
            for day in 0..=32 {
                let text = format!("{year:04}-{month:02}-{day:02}");
                assert_eq!(
                    date_fields(text.as_bytes()).is_some(),
                    NaiveDate::from_ymd_opt(year, month, day).is_some(),
                    "{text}"
                );
            }
        }
    }
    for hour in 0..=25 {
        for minute in [0, 59, 60, 61] {
            for second in [0, 59, 60] {
                let text = format!("{hour:02}:{minute:02}:{second:02}");
                assert_eq!(
                    time_fields(text.as_bytes()).is_some(),
                    NaiveTime::from_hms_opt(hour, minute, second).is_some(),
                    "{text}"
                );
            }
        }
    }
}

#[test]
fn identifiers_with_leading_zeros_and_phone_numbers_stay_text() {
    assert_eq!(column(&["00123"]), ColumnType::Text);
    assert_eq!(column(&["123", "00123"]), ColumnType::Text);
    assert_eq!(column(&["090-1234-5678"]), ColumnType::Text);
    assert_eq!(column(&["+81 3 1234 5678"]), ColumnType::Text);
    assert_eq!(column(&["01.5"]), ColumnType::Text);
    assert_eq!(column(&["12345678901234567890"]), ColumnType::Text);
    assert_eq!(column(&["2024-02-30"]), ColumnType::Text);
    assert_eq!(column(&["2024-01-31 あいうえおか"]), ColumnType::Text);
    assert_eq!(column(&["2024-01-31 25:00"]), ColumnType::Text);
    assert_eq!(column(&["2024-1-31"]), ColumnType::Text);
}

#[test]
fn render_turns_strings_into_typed_json() {
    assert_eq!(render(json!("-42"), ColumnType::Integer), json!(-42));
    assert_eq!(render(json!("2.5"), ColumnType::Decimal), json!(2.5));
    assert_eq!(render(json!("3"), ColumnType::Decimal), json!(3));
    assert_eq!(render(json!("TRUE"), ColumnType::Boolean), json!(true));
    assert_eq!(
        render(json!("2024/01/05"), ColumnType::Date),
        json!("2024-01-05")
    );
    assert_eq!(
        render(json!("2024-01-05 10:30"), ColumnType::DateTime),
        json!("2024-01-05T10:30:00")
    );
    assert_eq!(
        render(json!("2024-01-05T10:30:00.5+09:00"), ColumnType::DateTime),
        json!("2024-01-05T10:30:00.500+09:00")
    );
    assert_eq!(
        render(json!("2024-01-05"), ColumnType::DateTime),
        json!("2024-01-05T00:00:00")
    );
}

#[test]
fn render_leaves_text_nulls_and_typed_values_alone() {
    assert_eq!(render(json!("00123"), ColumnType::Text), json!("00123"));
    assert_eq!(render(Value::Null, ColumnType::Integer), Value::Null);
    assert_eq!(render(json!(1.5), ColumnType::Mixed), json!(1.5));
    assert_eq!(render(json!("oops"), ColumnType::Integer), json!("oops"));
}

#[test]
fn column_types_serialize_in_snake_case() {
    assert_eq!(
        serde_json::to_string(&ColumnType::DateTime).ok().as_deref(),
        Some("\"date_time\"")
    );
}

/// How dates and datetimes were written with chrono's `format` before [`IsoText`]: the
/// oracle it must agree with.
fn chrono_text(s: &str, ty: ColumnType) -> Option<String> {
    if let Some(d) = parse_date(s) {
        return Some(match ty {
            ColumnType::Date => d.format("%Y-%m-%d").to_string(),
            _ => d
                .and_time(NaiveTime::MIN)
                .format("%Y-%m-%dT%H:%M:%S")
                .to_string(),
        });
    }
    let ((year, month, day), (hour, minute, second, nanos), offset_len) =
        datetime_fields(s.as_bytes())?;
    let dt = NaiveDate::from_ymd_opt(year, month, day)?
        .and_time(NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?);
    let base = if nanos == 0 {
        dt.format("%Y-%m-%dT%H:%M:%S").to_string()
    } else {
        dt.format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
    };
    Some(format!("{base}{}", &s[s.len() - offset_len..]))
}

#[test]
fn dates_and_datetimes_are_written_as_chrono_wrote_them() {
    let mut checked = 0;
    for year in [
        "0000", "0001", "0999", "1000", "1900", "1970", "2000", "2024", "9999",
    ] {
        for month in 1..=12 {
            for day in [1, 9, 10, 28, 29, 30, 31] {
                for sep in ['-', '/'] {
                    let date = format!("{year}{sep}{month:02}{sep}{day:02}");
                    let want = chrono_text(&date, ColumnType::Date);
                    let got = render_str(&date, ColumnType::Date)
                        .map(|r| Value::from(r).as_str().map(str::to_owned));
                    assert_eq!(got, want.clone().map(Some), "{date}");
                    if want.is_none() {
                        continue;
                    }
                    for time in [
                        "00:00",
                        "09:05",
                        "23:59:59",
                        "12:34:56.7",
                        "12:34:56.000001",
                        "12:34:56.999999999",
                        "01:02:03.123456789",
                        "10:30:00.5",
                    ] {
                        for offset in ["", "Z", "+09:00", "-05:30"] {
                            for t in ['T', ' '] {
                                let s = format!("{date}{t}{time}{offset}");
                                let want = chrono_text(&s, ColumnType::DateTime);
                                assert!(want.is_some(), "{s}");
                                assert_eq!(parse_datetime(&s), want, "{s}");
                                let rendered = render(json!(s), ColumnType::DateTime);
                                assert_eq!(rendered.as_str(), want.as_deref(), "{s}");
                                checked += 1;
                            }
                        }
                    }
                    let midnight = render(json!(date), ColumnType::DateTime);
                    assert_eq!(
                        midnight.as_str(),
                        chrono_text(&date, ColumnType::DateTime).as_deref()
                    );
                }
            }
        }
    }
    assert!(checked > 50_000, "{checked}");
}

#[test]
fn render_str_is_what_render_makes_of_a_string() {
    let cases = [
        ("42", ColumnType::Integer, Some(Rendered::Integer(42))),
        ("3", ColumnType::Decimal, Some(Rendered::Integer(3))),
        ("2.5", ColumnType::Decimal, Some(Rendered::Decimal(2.5))),
        ("1e999", ColumnType::Decimal, None),
        ("TRUE", ColumnType::Boolean, Some(Rendered::Boolean(true))),
        ("x", ColumnType::Integer, None),
        ("2024-01-05", ColumnType::Text, None),
        ("2024-01-05", ColumnType::Mixed, None),
    ];
    for (s, ty, want) in cases {
        assert_eq!(render_str(s, ty), want, "{s} {ty:?}");
        assert_eq!(
            render(json!(s), ty),
            want.map_or(json!(s), Value::from),
            "{s} {ty:?}"
        );
    }
}

use serde_json::json;

use super::super::strptime::Pattern;
use super::super::value::{DateTime, Value};
use super::text_json;

/// What `format` reads from `text`, as a datetime's JSON text without quotes.
fn read(format: &str, text: &str) -> Option<String> {
    let pattern = Pattern::compile(format).unwrap_or_else(|e| panic!("{format}: {e}"));
    let parsed = pattern.parse(text)?;
    let value = Value::DateTime(DateTime {
        local: parsed.date.and_time(parsed.time),
        offset: parsed.offset,
    });
    Some(value.to_string())
}

#[test]
fn patterns_read_what_python_strptime_reads() {
    // Every expectation below is Python 3.11's `datetime.strptime(text, format)`.
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("5/3/2024", "%d/%m/%Y", Some("2024-03-05T00:00:00")),
        ("05/03/2024", "%d/%m/%Y", Some("2024-03-05T00:00:00")),
        (" 5/03/2024", "%d/%m/%Y", Some("2024-03-05T00:00:00")),
        ("31/12/24", "%d/%m/%Y", None),
        ("5/3/2024 ", "%d/%m/%Y", None),
        ("32/01/2024", "%d/%m/%Y", None),
        ("29/02/2023", "%d/%m/%Y", None),
        ("29/02/2024", "%d/%m/%Y", Some("2024-02-29T00:00:00")),
        ("1122024", "%d%m%Y", Some("2024-02-11T00:00:00")),
        ("3112024", "%d%m%Y", Some("2024-01-31T00:00:00")),
        ("1/2/69", "%d/%m/%y", Some("1969-02-01T00:00:00")),
        ("1/2/68", "%d/%m/%y", Some("2068-02-01T00:00:00")),
        (
            "2024-01-05 10:30",
            "%Y-%m-%d %H:%M",
            Some("2024-01-05T10:30:00"),
        ),
        (
            "2024-01-05   10:30",
            "%Y-%m-%d %H:%M",
            Some("2024-01-05T10:30:00"),
        ),
        ("2024-01-0510:30", "%Y-%m-%d %H:%M", None),
        ("12 am", "%I %p", Some("1900-01-01T00:00:00")),
        ("12 PM", "%I %p", Some("1900-01-01T12:00:00")),
        ("1 pm", "%I %p", Some("1900-01-01T13:00:00")),
        ("13 pm", "%I %p", None),
        ("5 March 2024", "%d %B %Y", Some("2024-03-05T00:00:00")),
        ("5 MAR 2024", "%d %b %Y", Some("2024-03-05T00:00:00")),
        ("5 Mar. 2024", "%d %b. %Y", Some("2024-03-05T00:00:00")),
        ("2024 366", "%Y %j", Some("2024-12-31T00:00:00")),
        ("2023 366", "%Y %j", Some("2024-01-01T00:00:00")),
        ("2024 000", "%Y %j", None),
        ("10:00:00.5", "%H:%M:%S.%f", Some("1900-01-01T10:00:00.500")),
        ("10:00:00.1234567", "%H:%M:%S.%f", None),
        ("10:00 +0130", "%H:%M %z", Some("1900-01-01T10:00:00+01:30")),
        (
            "10:00 -01:30",
            "%H:%M %z",
            Some("1900-01-01T10:00:00-01:30"),
        ),
        ("10:00 Z", "%H:%M %z", Some("1900-01-01T10:00:00Z")),
        ("10:00 z", "%H:%M %z", None),
        (
            "10:00 +01:00:30",
            "%H:%M %z",
            Some("1900-01-01T10:00:00+01:00:30"),
        ),
        ("10:00 +24:00", "%H:%M %z", None),
        ("10:00:60", "%H:%M:%S", None),
        ("24:00", "%H:%M", None),
        ("0000-01-01", "%Y-%m-%d", None),
        (
            "Tue Mar  5 10:00:00 2024",
            "%c",
            Some("2024-03-05T10:00:00"),
        ),
        ("03/05/24", "%x", Some("2024-03-05T00:00:00")),
        ("2024-T", "%Y-t", Some("2024-01-01T00:00:00")),
        (
            "monday 2024-01-03",
            "%A %Y-%m-%d",
            Some("2024-01-03T00:00:00"),
        ),
        ("7 2024", "%u %Y", Some("2024-01-01T00:00:00")),
        ("100%", "%d%%", None),
        ("2024", "%Y", Some("2024-01-01T00:00:00")),
        ("02/2024", "%m/%Y", Some("2024-02-01T00:00:00")),
        ("29/02", "%d/%m", None),
        ("10:5", "%H:%M", Some("1900-01-01T10:05:00")),
        ("1005", "%H%M", Some("1900-01-01T10:05:00")),
        ("105", "%H%M", Some("1900-01-01T10:05:00")),
    ];
    for (text, format, expected) in cases {
        assert_eq!(
            read(format, text).as_deref(),
            *expected,
            "{text:?} with {format:?}"
        );
    }
}

#[test]
fn patterns_python_cannot_use_are_refused_with_a_reason() {
    for (format, reason) in [
        ("%d/%m/%", "ends with a lone %"),
        ("%e/%m/%Y", "%e is not a strptime directive"),
        (
            "%Y-%m-%d %Z",
            "%Z (time zone names) is not supported; use %z",
        ),
        ("%Y week %W", "%W (week numbers) is not supported"),
        ("%G-%V", "%G (week numbers) is not supported"),
        ("%d %d", "%d appears more than once"),
        ("%c %Y", "%Y appears more than once"),
    ] {
        assert_eq!(
            Pattern::compile(format).err().as_deref(),
            Some(reason),
            "{format}"
        );
    }
}

#[test]
fn adjacent_numeric_directives_cannot_make_reading_slow() {
    // Twelve adjacent two-digit directives give 2^12 readings to try on a text that fails
    // late; the step budget ends it. The test only asserts that it returns.
    let pattern = Pattern::compile("%d%m%H%M%S%I%y%j%w%u%f").unwrap();
    let text = format!("{}x", "1".repeat(30));
    assert_eq!(pattern.parse(&text), None);
}

#[test]
fn date_fields_with_a_pattern_keep_the_date_and_datetime_fields_the_offset() {
    let date = json!({"name": "d", "type": "date", "format": "%d/%m/%Y %H:%M"});
    assert_eq!(
        text_json(&date, "05/03/2024 10:30").as_deref(),
        Some("\"2024-03-05\"")
    );
    let datetime = json!({"name": "d", "type": "datetime", "format": "%d.%m.%Y %H:%M:%S%z"});
    assert_eq!(
        text_json(&datetime, "05.03.2024 10:30:00+0200").as_deref(),
        Some("\"2024-03-05T10:30:00+02:00\"")
    );
    let time = json!({"name": "t", "type": "time", "format": "%I:%M %p"});
    assert_eq!(
        text_json(&time, "07:45 PM").as_deref(),
        Some("\"19:45:00\"")
    );
    assert_eq!(text_json(&time, "19:45"), None);
    let legacy = json!({"name": "d", "type": "date", "format": "fmt:%Y%m%d"});
    assert_eq!(
        text_json(&legacy, "20240305").as_deref(),
        Some("\"2024-03-05\"")
    );
}

#[test]
fn the_first_reading_shortcut_agrees_with_the_full_matcher() {
    let formats = [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S.%f",
        "%d/%m/%Y",
        "%d%m%Y",
        "%m%d%y",
        "%H:%M",
        "%j %Y",
        "x%Yy%m",
    ];
    let texts = [
        "2024-03-05 10:20:30",
        "2024-03-05  10:20:30",
        "2024-03-05\t1:2:3",
        "2024-03-05\u{3000}10:20:30",
        "2024-3-5 10:20:60",
        "2024-02-30 10:20:30",
        "0000-01-01 00:00:00",
        "2024-03-05T10:20:30.5",
        "2024-03-05t10:20:30.1234567",
        "2024-03-05 24:00:00",
        "5/3/2024",
        " 5/03/2024",
        "1122024",
        "12312024",
        "123124",
        "9:05",
        "366 2024",
        "X2024Y12",
        "x2024y1",
        "",
    ];
    for format in formats {
        let pattern = Pattern::compile(format).unwrap_or_else(|e| panic!("{format}: {e}"));
        for text in texts {
            assert_eq!(
                pattern.parse(text),
                pattern.parse_backtracking(text),
                "{format} on {text:?}"
            );
        }
    }
}

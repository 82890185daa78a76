//! The planted-fault files of `harness::faults` judged by the reference implementation of Table
//! Schema, the `frictionless` Python package, through tests/oracle/verdict.py in the venv that
//! tests/stack/test.sh installs: for every case and both of its files, frictionless must report
//! exactly the planted errors (row, column, field, code, constraint), except where
//! `KNOWN_DIFFERENCES` says it differs, and there exactly as it says. So the errors the
//! template tests hold our engine to are the reference's verdicts, or a listed departure.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;

use harness::faults::{self, Expected, FaultCase, FileKind, Verdict, KNOWN_DIFFERENCES};
use serde_json::Value;

/// An error record as both sides are compared: ordered, so two lists compare as multisets once
/// sorted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Record {
    row: Option<u64>,
    column: Option<String>,
    field: Option<String>,
    code: String,
    constraint: Option<String>,
}

impl From<&Expected> for Record {
    fn from(e: &Expected) -> Self {
        Record {
            row: Some(e.row),
            column: e.column.clone(),
            field: e.field.clone(),
            code: e.code.to_owned(),
            constraint: e.constraint.map(str::to_owned),
        }
    }
}

impl From<&Verdict> for Record {
    fn from(v: &Verdict) -> Self {
        Record {
            row: v.row,
            column: v.column.map(str::to_owned),
            field: v.field.map(str::to_owned),
            code: v.code.to_owned(),
            constraint: v.constraint.map(str::to_owned),
        }
    }
}

impl Record {
    /// One record of verdict.py's output.
    fn from_json(v: &Value) -> Result<Self, String> {
        let text = |key: &str| -> Result<Option<String>, String> {
            match &v[key] {
                Value::Null => Ok(None),
                Value::String(s) => Ok(Some(s.clone())),
                other => Err(format!("{key} is {other} in {v}")),
            }
        };
        Ok(Record {
            row: match &v["row"] {
                Value::Null => None,
                row => Some(row.as_u64().ok_or_else(|| format!("row is {row} in {v}"))?),
            },
            column: text("column")?,
            field: text("field")?,
            code: text("code")?.ok_or_else(|| format!("no code in {v}"))?,
            constraint: text("constraint")?,
        })
    }
}

/// What frictionless must report for a case's file: the case's expected errors, with each
/// known difference's `ours` taken out and its `frictionless` put in; sorted. An `ours` the
/// case does not expect is an error: the list would describe a difference that is not there.
fn frictionless_should_say(case: &FaultCase, kind: FileKind) -> Result<Vec<Record>, String> {
    let mut want: Vec<Record> = case.expected_in(kind).map(Record::from).collect();
    let differences = KNOWN_DIFFERENCES
        .iter()
        .filter(|d| d.case == case.name && d.files.contains(&kind));
    for difference in differences {
        for ours in difference.ours {
            let ours = Record::from(ours);
            let at = want.iter().position(|r| *r == ours).ok_or_else(|| {
                format!(
                    "KNOWN_DIFFERENCES lists {ours:?} as ours for {} ({kind:?}), \
                     which the case does not expect",
                    case.name
                )
            })?;
            want.remove(at);
        }
        want.extend(difference.frictionless.iter().map(Record::from));
    }
    want.sort();
    Ok(want)
}

/// The venv's python with frictionless (tests/stack/test.sh installs it and exports `SHEETRELAY_FRICTIONLESS`).
fn python() -> PathBuf {
    harness::venvs::python("SHEETRELAY_FRICTIONLESS", "oracle-venv", "frictionless")
}

/// Frictionless's verdict on a case's file, sorted.
fn verdict(python: &Path, case: &FaultCase, kind: FileKind) -> Result<Vec<Record>, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let schema = dir.path().join("schema.json");
    let data = dir
        .path()
        .join(format!("{}.{}", case.name, kind.extension()));
    let schema_json = serde_json::to_vec(&case.schema).map_err(|e| e.to_string())?;
    std::fs::write(&schema, schema_json).map_err(|e| format!("write schema: {e}"))?;
    std::fs::write(&data, case.file(kind)).map_err(|e| format!("write file: {e}"))?;

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("oracle/verdict.py");
    let mut command = Command::new(python);
    command.arg(&script).arg(&data).arg(&schema);
    if kind == FileKind::Xlsx {
        command.args(["--sheet", faults::SHEET]);
    }
    let output = command
        .output()
        .map_err(|e| format!("run {}: {e}", python.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("verdict.py failed ({}):\n{stderr}", output.status));
    }
    let records: Vec<Value> = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("verdict.py printed no JSON array ({e}):\n{stderr}"))?;
    let mut records = records
        .iter()
        .map(Record::from_json)
        .collect::<Result<Vec<_>, _>>()?;
    records.sort();
    Ok(records)
}

/// `a` without the records of `b` (as multisets).
fn without(a: &[Record], b: &[Record]) -> Vec<Record> {
    let mut rest = b.to_vec();
    a.iter()
        .filter(|r| match rest.iter().position(|x| x == *r) {
            Some(at) => {
                rest.remove(at);
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// Why frictionless's verdict on one file is not the one it should be, if it is not.
fn mismatch(python: &Path, case: &FaultCase, kind: FileKind) -> Option<String> {
    let result = frictionless_should_say(case, kind)
        .and_then(|want| verdict(python, case, kind).map(|got| (want, got)));
    let (want, got) = match result {
        Ok(pair) => pair,
        Err(e) => return Some(format!("{} ({kind:?}): {e}", case.name)),
    };
    if want == got {
        return None;
    }
    let mut report = format!("{} ({kind:?}): frictionless said otherwise", case.name);
    for r in without(&want, &got) {
        let _ = write!(report, "\n  missing:    {r:?}");
    }
    for r in without(&got, &want) {
        let _ = write!(report, "\n  unexpected: {r:?}");
    }
    Some(report)
}

#[test]
fn frictionless_reports_exactly_the_planted_faults_or_a_listed_difference() {
    let python = python();
    let cases = faults::cases();
    let runs: Vec<(&FaultCase, FileKind)> = cases
        .iter()
        .flat_map(|case| FileKind::ALL.map(|kind| (case, kind)))
        .collect();
    // Each run starts a python that imports frictionless (a second of CPU): as many at once as
    // there are cores.
    let width = thread::available_parallelism().map_or(2, |n| n.get());
    let mut mismatches = Vec::new();
    for batch in runs.chunks(width) {
        thread::scope(|s| {
            let python = &python;
            let handles: Vec<_> = batch
                .iter()
                .map(|&(case, kind)| s.spawn(move || mismatch(python, case, kind)))
                .collect();
            mismatches.extend(
                handles
                    .into_iter()
                    .filter_map(|h| h.join().expect("verdict run")),
            );
        });
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_known_difference_replaces_errors_its_case_expects() {
    let names: Vec<&str> = faults::cases().iter().map(|c| c.name).collect();
    for difference in KNOWN_DIFFERENCES {
        assert!(
            names.contains(&difference.case),
            "KNOWN_DIFFERENCES names no case: {}",
            difference.case
        );
        assert!(!difference.files.is_empty() && !difference.why.is_empty());
    }
    for case in faults::cases() {
        for kind in FileKind::ALL {
            if let Err(e) = frictionless_should_say(&case, kind) {
                panic!("{e}");
            }
        }
    }
}

#[test]
fn the_cases_plant_every_code_and_every_constraint() {
    let cases = faults::cases();
    let planted: Vec<&Expected> = cases.iter().flat_map(|c| &c.expected).collect();
    for code in [
        "type-error",
        "constraint-error",
        "unique-error",
        "primary-key",
        "missing-cell",
        "extra-cell",
        "blank-row",
        "missing-label",
        "duplicate-label",
    ] {
        assert!(
            planted.iter().any(|e| e.code == code),
            "no case plants a {code}"
        );
    }
    for constraint in [
        "required",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "pattern",
        "enum",
    ] {
        assert!(
            planted.iter().any(|e| e.constraint == Some(constraint)),
            "no case breaks a {constraint} constraint"
        );
    }
}

#[test]
fn the_fault_files_are_the_same_bytes_every_time() {
    let (first, again) = (faults::cases(), faults::cases());
    for (a, b) in first.iter().zip(&again) {
        assert!(
            a.csv == b.csv && a.xlsx == b.xlsx,
            "{} differs between runs",
            a.name
        );
    }
}

//! Parse-only measurements for the parsing benchmark (issue 5, scenario 5): generates the
//! 12-column business table as CSV (UTF-8 or Shift_JIS) or xlsx, then parses it in process or
//! through the isolated child, printing rows/s and the peak RSS of the parsing process.
//!
//! ```text
//! cargo build --release -p worker --example parse_bench --bin worker
//! target/release/examples/parse_bench gen-csv  /tmp/b.csv  1000000 [sjis]
//! target/release/examples/parse_bench gen-xlsx /tmp/b.xlsx 1000000
//! target/release/examples/parse_bench parse    /tmp/b.csv  csv
//! target/release/examples/parse_bench isolated /tmp/b.csv  csv target/release/worker
//! ```
#![allow(clippy::print_stdout)]

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use worker::parse::isolate::{parse_isolated, Isolation};
use worker::parse::{parse_file, FileFormat, ParseEvent, ParseLimits};

const NAMES: [&str; 4] = ["Alice Smith", "山田太郎", "Bob, Jr.", "鈴木花子"];

fn row(i: u64) -> [String; 12] {
    let note = if i.is_multiple_of(10) {
        "\"multi\nline note\"".to_owned()
    } else {
        format!("note {}", i % 97)
    };
    [
        i.to_string(),
        format!("customer-{i:08}"),
        NAMES[(i % 4) as usize].to_owned(),
        (i % 1000).to_string(),
        format!("{}.{:02}", i % 10_000, i % 100),
        format!("2024-{:02}-{:02}", i % 12 + 1, i % 28 + 1),
        format!(
            "2024-{:02}-{:02}T{:02}:{:02}:00",
            i % 12 + 1,
            i % 28 + 1,
            i % 24,
            i % 60
        ),
        if i.is_multiple_of(3) { "true" } else { "false" }.to_owned(),
        String::new(),
        note,
        format!("{:05}", i % 100_000),
        format!("東京都 {}", i % 500),
    ]
}

const HEADER: [&str; 12] = [
    "id", "customer", "name", "qty", "amount", "day", "at", "active", "empty", "note", "code",
    "city",
];

fn gen_csv(path: &Path, rows: u64, sjis: bool) -> anyhow::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut line = HEADER.join(",");
    line.push('\n');
    let mut write = |s: &str| -> anyhow::Result<()> {
        if sjis {
            let (b, _, _) = encoding_rs::SHIFT_JIS.encode(s);
            out.write_all(&b)?;
        } else {
            out.write_all(s.as_bytes())?;
        }
        Ok(())
    };
    write(&line)?;
    for i in 0..rows {
        let r = row(i);
        line.clear();
        for (c, v) in r.iter().enumerate() {
            if c > 0 {
                line.push(',');
            }
            if v.contains(',') && !v.starts_with('"') {
                line.push('"');
                line.push_str(v);
                line.push('"');
            } else {
                line.push_str(v);
            }
        }
        line.push('\n');
        write(&line)?;
    }
    Ok(())
}

fn gen_xlsx(path: &Path, rows: u64) -> anyhow::Result<()> {
    use rust_xlsxwriter::{Format, Workbook};
    let mut wb = Workbook::new();
    let date = Format::new().set_num_format("yyyy-mm-dd");
    let datetime = Format::new().set_num_format("yyyy-mm-dd hh:mm");
    // Shared strings as Excel writes them (not constant-memory inline strings).
    let ws = wb.add_worksheet();
    for (c, h) in HEADER.iter().enumerate() {
        ws.write_string(0, c as u16, *h)?;
    }
    for i in 0..rows {
        let r = (i + 1) as u32;
        let v = row(i);
        ws.write_number(r, 0, i as f64)?;
        ws.write_string(r, 1, &v[1])?;
        ws.write_string(r, 2, &v[2])?;
        ws.write_number(r, 3, (i % 1000) as f64)?;
        ws.write_number(r, 4, v[4].parse::<f64>()?)?;
        ws.write_number_with_format(r, 5, 45292.0 + (i % 365) as f64, &date)?;
        ws.write_number_with_format(r, 6, 45292.25 + (i % 365) as f64, &datetime)?;
        ws.write_boolean(r, 7, i % 3 == 0)?;
        ws.write_string(r, 9, v[9].trim_matches('"'))?;
        ws.write_string(r, 10, &v[10])?;
        ws.write_string(r, 11, &v[11])?;
    }
    wb.save(path)?;
    Ok(())
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let cmd = args.get(1).map(String::as_str).unwrap_or("");
    let path = PathBuf::from(args.get(2).context("path")?);
    match cmd {
        "gen-csv" => gen_csv(
            &path,
            args.get(3).context("rows")?.parse()?,
            args.get(4).is_some_and(|a| a == "sjis"),
        ),
        "gen-xlsx" => gen_xlsx(&path, args.get(3).context("rows")?.parse()?),
        "parse" => {
            let format = FileFormat::parse(args.get(3).context("format")?).context("format")?;
            let start = Instant::now();
            let mut rows = 0u64;
            let mut bytes = 0u64;
            let summary = parse_file(&path, format, &ParseLimits::default(), &mut |e| {
                if let ParseEvent::Row { values, .. } = e {
                    rows += 1;
                    bytes += values.len() as u64;
                }
                Ok(())
            })
            .map_err(|f| anyhow::anyhow!("{f}"))?;
            let secs = start.elapsed().as_secs_f64();
            println!(
                "in-process {}: {rows} rows in {secs:.2}s = {:.0} rows/s, {:.0} MB JSON, peak RSS {:.0} MB, types {:?}",
                path.display(),
                rows as f64 / secs,
                bytes as f64 / 1e6,
                peak_rss_mb(),
                summary.sheets.first().map(|s| s.column_types.clone())
            );
            Ok(())
        }
        "isolated" => {
            let format = FileFormat::parse(args.get(3).context("format")?).context("format")?;
            let exe = PathBuf::from(args.get(4).context("worker exe")?);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let start = Instant::now();
            let mut rows = 0u64;
            let iso = Isolation::new(exe, ParseLimits::default());
            let result = rt.block_on(parse_isolated(&iso, &path, format, |e| {
                if matches!(e, ParseEvent::Row { .. }) {
                    rows += 1;
                }
                Ok(())
            }))?;
            if let Err(f) = result {
                bail!("{f}");
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "isolated {}: {rows} rows in {secs:.2}s = {:.0} rows/s, parent peak RSS {:.0} MB",
                path.display(),
                rows as f64 / secs,
                peak_rss_mb()
            );
            Ok(())
        }
        other => bail!("unknown command {other:?}"),
    }
}

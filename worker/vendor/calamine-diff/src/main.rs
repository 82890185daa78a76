//! The vendored calamine against the release it patches, calamine 0.38.0 from crates.io, on
//! workbooks neither was written against: every workbook under a folder is read through both,
//! in each view (`views`), and the two readings must be the same line for line, except where
//! the list of expected differences says a patch changes them on purpose. A listed difference
//! that no longer occurs fails too, so the list stays true. `tests/calamine/run.sh` fetches the
//! corpus and runs `check`; `show` prints one workbook's differences in full.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use std::{fs, io, panic};

mod compare;
mod dump;
mod expected;
mod views;

use views::{Format, View};

const USAGE: &str = "usage: calamine-diff check <corpus folder> <expected differences>
       calamine-diff show <workbook>";

fn main() -> ExitCode {
    // A reader's panic is caught and compared as part of its dump (`Dump::catching`); the
    // default hook would print each one as if the tool had failed.
    panic::set_hook(Box::new(|_| {}));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [cmd, corpus, list] if cmd == "check" => check(Path::new(corpus), Path::new(list)),
        [cmd, workbook] if cmd == "show" => show(Path::new(workbook)),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("calamine-diff: {e}");
            ExitCode::from(2)
        }
    }
}

/// Reads every workbook of the corpus through both crates; true when every difference is
/// listed and every listed difference occurs.
fn check(corpus: &Path, list: &Path) -> Result<bool, String> {
    let started = Instant::now();
    let text = fs::read_to_string(list).map_err(|e| format!("{}: {e}", list.display()))?;
    let expected = expected::parse(&text).map_err(|e| format!("{}: {e}", list.display()))?;
    let mut workbooks = Vec::new();
    walk(corpus, &mut workbooks).map_err(|e| format!("{}: {e}", corpus.display()))?;
    workbooks.sort_by(|a, b| a.0.cmp(&b.0));
    if workbooks.is_empty() {
        return Err(format!("no workbooks under {}", corpus.display()));
    }

    let mut per_format: BTreeMap<String, usize> = BTreeMap::new();
    let mut used = vec![false; expected.len()];
    let (mut unexpected, mut failing) = (0, 0);
    for (path, format) in &workbooks {
        let name = relative(corpus, path);
        *per_format.entry(format!("{format:?}")).or_default() += 1;
        let book = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let reading = compare::workbook(*format, &book);
        if let Some(failure) = &reading.failure {
            failing += 1;
            println!("fails alike   {name}: {failure}");
        }
        for difference in &reading.differences {
            match expected
                .iter()
                .position(|e| e.covers(&name, difference.view))
            {
                Some(i) => {
                    used[i] = true;
                    let e = &expected[i];
                    println!(
                        "expected      {name} [{}]: patch {}: {}",
                        difference.view, e.patch, e.reason
                    );
                }
                None => {
                    unexpected += 1;
                    println!("UNEXPECTED    {name} [{}]:", difference.view);
                    print!("{}", difference.excerpt(2, 20));
                }
            }
        }
    }
    let stale: Vec<&expected::Expected> = expected
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(e, _)| e)
        .collect();
    for e in &stale {
        println!("NO LONGER     {e}");
    }

    let formats: Vec<String> = per_format.iter().map(|(f, n)| format!("{f} {n}")).collect();
    println!(
        "calamine-diff: {} workbooks ({}), views {}; {} fail alike on both sides; \
         {} expected difference(s) listed, {} unexpected, {} no longer occurring; {:.1} s",
        workbooks.len(),
        formats.join(", "),
        View::ALL.map(|v| v.to_string()).join(", "),
        failing,
        expected.len(),
        unexpected,
        stale.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(unexpected == 0 && stale.is_empty())
}

/// Prints every view of one workbook in which the two crates differ, in full.
fn show(path: &Path) -> Result<bool, String> {
    let format = Format::of(path).ok_or_else(|| format!("{}: not a workbook", path.display()))?;
    let book = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reading = compare::workbook(format, &book);
    for difference in &reading.differences {
        println!("[{}] fork -, calamine 0.38.0 +", difference.view);
        print!("{}", difference.excerpt(3, usize::MAX));
    }
    Ok(reading.differences.is_empty())
}

/// Every workbook under `dir`, with its format.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, Format)>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if let Some(format) = Format::of(&path) {
            out.push((path, format));
        }
    }
    Ok(())
}

/// A workbook's name in the list: its path under the corpus folder, with `/` separators.
fn relative(corpus: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(corpus).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

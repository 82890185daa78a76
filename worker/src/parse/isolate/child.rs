//! The parse child's side: `worker parse-child [--limits-json J]`, a hidden subcommand that the
//! worker's `main` runs before starting any runtime or reading any configuration. It caps its
//! own address space (RLIMIT_AS) before reading anything, then parses the files it is asked for
//! on stdin, one at a time (a [`ParseRequest`] as one JSON line), writing their frames to stdout
//! (a Unix socket, written by a thread of its own: [`BackgroundWriter`]) until stdin ends.

use std::io::{self, BufRead, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use std::process::ExitCode;

use super::frame::{encode_event, encode_outcome};
use super::SOCKET_BUFFER;
use crate::parse::writers::background::BackgroundWriter;
use crate::parse::{
    parse_file, parse_templated, parse_with_layout, FileFormat, LayoutOverride, ParseFailure,
    ParseLimits, ParseSummary, TaskErrorCode, TemplateJob,
};

/// The hidden subcommand that makes the worker executable a parse child.
pub const CHILD_SUBCOMMAND: &str = "parse-child";

/// The long flag (without its dashes) that carries the child's limits.
pub(super) const LIMITS_ARG: &str = "limits-json";

/// `worker parse-child`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ChildArgs {
    /// The limits to parse under, as JSON (the defaults without it)
    #[arg(long = LIMITS_ARG, value_name = "JSON", value_parser = limits_from_json)]
    pub limits: Option<ParseLimits>,
}

fn limits_from_json(json: &str) -> Result<ParseLimits, String> {
    serde_json::from_str(json).map_err(|e| format!("bad limits: {e}"))
}

/// What the parent asks of a child, one JSON line per file: room for a template (and, later,
/// a column mapping) beside the file itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ParseRequest {
    pub format: FileFormat,
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateJob>,
    /// Where a person said the file's tables lie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutOverride>,
}

fn parse_request(line: &str) -> Result<ParseRequest, String> {
    serde_json::from_str(line).map_err(|e| format!("bad request: {e}"))
}

/// Parses one file, turning a panic into a `parser_crashed` failure.
fn parse_caught(
    request: &ParseRequest,
    limits: &ParseLimits,
    out: &mut impl Write,
) -> Result<ParseSummary, ParseFailure> {
    let (path, format) = (request.path.as_path(), request.format);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let on_event = &mut |event: crate::parse::ParseEvent<'_>| encode_event(out, event);
        match (&request.template, &request.layout) {
            (None, None) => parse_file(path, format, limits, on_event),
            (Some(job), None) => parse_templated(path, format, limits, job, on_event),
            (job, Some(layout)) => {
                parse_with_layout(path, format, limits, job.as_ref(), layout, on_event)
            }
        }
    }));
    result.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        Err(ParseFailure::new(
            TaskErrorCode::ParserCrashed,
            format!("the parser failed on this file: {what}"),
        ))
    })
}

/// The entry point of a parse child: serves requests until stdin ends.
pub fn child_main(args: ChildArgs) -> ExitCode {
    let limits = args.limits.unwrap_or_default();
    // Cap our own address space before touching any file: a failed allocation then aborts
    // this process only, and the parent reports `memory_limit`.
    let cap = limits.memory_limit_bytes;
    if let Err(e) = rlimit::setrlimit(rlimit::Resource::AS, cap, cap) {
        eprintln!("parse-child: cannot set the memory limit: {e}");
        return ExitCode::from(3);
    }
    // Our own handle on stdout: writes of whole buffers, without `Stdout`'s line buffering.
    let stdout = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from);
    let Ok(mut out) = stdout.and_then(|fd| BackgroundWriter::new(fd, SOCKET_BUFFER)) else {
        eprintln!("parse-child: cannot set up the output");
        return ExitCode::from(3);
    };
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else {
            return ExitCode::from(2);
        };
        let request = match parse_request(&line) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("parse-child: {e}");
                return ExitCode::from(2);
            }
        };
        let outcome = parse_caught(&request, &limits, &mut out);
        if encode_outcome(&mut out, &outcome)
            .and_then(|()| out.flush())
            .is_err()
        {
            // The parent went away; nobody is left to tell.
            return ExitCode::from(4);
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ChildArgs,
    }

    #[test]
    fn child_arguments_and_requests_are_read() {
        let json = r#"{"max_rows":5,"max_columns":2,"max_cell_bytes":9,"max_inflate_ratio":1,"max_inflated_bytes":1,"memory_limit_bytes":1,"timeout":{"secs":1,"nanos":0}}"#;
        let limits = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("parse-child").chain(args.iter().copied()))
                .map(|cli| cli.args.limits.unwrap_or_default().max_rows)
                .map_err(|e| e.kind())
        };
        assert_eq!(limits(&["--limits-json", json]), Ok(5));
        assert_eq!(limits(&[]), Ok(ParseLimits::default().max_rows));
        assert!(limits(&["/tmp/x"]).is_err());
        assert!(limits(&["--limits-json", "{}"]).is_err());
        assert_eq!(
            parse_request(r#"{"format":"tsv","path":"/tmp/a\tb.tsv"}"#),
            Ok(ParseRequest {
                format: FileFormat::Tsv,
                path: PathBuf::from("/tmp/a\tb.tsv"),
                template: None,
                layout: None
            })
        );
        assert!(parse_request("/tmp/x").is_err());
    }
}

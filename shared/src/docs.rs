//! The README's tables, read by the tests that keep them equal to the code they document (the
//! metric catalogue, the task error codes).

/// The body rows of the README table whose header line is `header` (e.g. `| code | |`), each as
/// its cells, trimmed, without the outer empty ones.
pub(crate) fn table(header: &str) -> Vec<Vec<&'static str>> {
    let readme = include_str!("../../README.md");
    let body = readme
        .split(&format!("\n{header}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("the README has a table headed `{header}`"));
    body.lines()
        .skip(1) // |---|---|
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            cells[1..cells.len() - 1].to_vec()
        })
        .collect()
}

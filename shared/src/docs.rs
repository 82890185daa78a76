//! The tables of the documentation (`README.md`, `docs/*.md`), read by the tests that keep them
//! equal to the code they document: the metric catalogue (`docs/operations.md`), the task error
//! codes (`docs/parsing.md`) and the binaries' settings (`docs/configuration.md`, checked in
//! `tests/it/configuration.rs`).

/// One Markdown document: its path from the repository's root, for messages, and its text
/// (`include_str!`'d by the test that reads it).
#[derive(Debug, Clone, Copy)]
pub struct Doc {
    pub path: &'static str,
    pub text: &'static str,
}

impl Doc {
    /// The body rows of the table whose header line is `header` (e.g. `| code | |`), each as its
    /// cells, trimmed, without the outer empty ones.
    ///
    /// # Panics
    /// When the document has no table with that header line: the test reading it fails.
    pub fn table(&self, header: &str) -> Vec<Vec<&'static str>> {
        let body = self
            .text
            .split(&format!("\n{header}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("{} has a table headed `{header}`", self.path));
        body.lines()
            .skip(1) // |---|---|
            .take_while(|l| l.starts_with('|'))
            .map(|row| {
                let cells: Vec<&str> = row.split('|').map(str::trim).collect();
                cells[1..cells.len() - 1].to_vec()
            })
            .collect()
    }
}

/// `docs/operations.md`: the metric table.
#[cfg(test)]
pub(crate) const OPERATIONS: Doc = Doc {
    path: "docs/operations.md",
    text: include_str!("../../docs/operations.md"),
};

/// `docs/parsing.md`: the task error codes.
#[cfg(test)]
pub(crate) const PARSING: Doc = Doc {
    path: "docs/parsing.md",
    text: include_str!("../../docs/parsing.md"),
};

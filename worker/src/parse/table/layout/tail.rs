//! The rows past a table's end, as the layout reports them: blocks of notes, and other
//! tables with the row that heads them.

use shared::domain::task_result::{SetAside, SetAsideKind};

use super::RowLook;

/// The rows past the table's end, in blocks (runs of rows between blank rows): a block with
/// a row of values under a row of names (or a row of two values or more) is a table, headed
/// by that row of names; any other block is notes. Blank rows go with the block after them, and
/// neighbouring blocks of notes make one range.
#[derive(Debug)]
pub(super) struct Tail {
    done: Vec<SetAside>,
    /// The open block: where its range starts, its last row, a row of names, whether it
    /// holds a table and that table's header row.
    from: u64,
    pub(super) last: u64,
    names_row: Option<u64>,
    table: Option<u64>,
}

impl Tail {
    pub(super) fn new(from: u64, first: RowLook) -> Self {
        let mut tail = Tail {
            done: Vec::new(),
            from,
            last: first.number,
            names_row: None,
            table: None,
        };
        tail.read(first);
        tail
    }

    pub(super) fn push(&mut self, row: RowLook, after_blank: bool) {
        if after_blank {
            self.close();
            self.from = self.last + 1;
            self.names_row = None;
            self.table = None;
        }
        self.last = row.number;
        self.read(row);
    }

    fn read(&mut self, row: RowLook) {
        if self.table.is_some() {
            return;
        }
        let filled = row.values + row.texts;
        if row.values >= 1 && filled >= 2 && (self.names_row.is_some() || row.values >= 2) {
            self.table = Some(self.names_row.unwrap_or(row.number));
        } else if row.texts >= 2 && row.values == 0 {
            self.names_row = Some(row.number);
        }
    }

    fn close(&mut self) {
        let block = match self.table {
            Some(h) => SetAside::new(self.from, self.last, SetAsideKind::Table, Some(h)),
            None => SetAside::new(self.from, self.last, SetAsideKind::Notes, None),
        };
        match self.done.last_mut() {
            Some(prev) if prev.kind == SetAsideKind::Notes && block.kind == SetAsideKind::Notes => {
                prev.to_row = block.to_row;
                prev.rows += block.rows;
            }
            _ => self.done.push(block),
        }
    }

    pub(super) fn finish(mut self) -> Vec<SetAside> {
        self.close();
        self.done
    }
}

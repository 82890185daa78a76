//! One hook's stage of the pipeline: rows come in (from the spool's tail for the first hook,
//! from the stage before for the others), are cut into windows of up to a batch, and each
//! window is asked about the rows the policy may store (the others ride along, so the order
//! holds), [`IN_FLIGHT`] windows at a time, while the next window fills. Answered windows are
//! merged and passed on in order; new answers go to the keeper.

use futures::stream::FuturesOrdered;
use futures::StreamExt as _;
use shared::db::hooks::KeptAnswer;
use shared::domain::OnInvalid;
use tokio::sync::mpsc;

use super::ask::{Answered, Target};
use super::merge::Merge;
use super::spool::{SpooledRow, Tail};
use super::Stop;

/// Batches of one task asked at once, per hook.
pub const IN_FLIGHT: usize = 4;

/// Where a stage's rows come from.
pub enum Rows {
    /// The spool the parse writes (the first hook).
    Tail(Tail),
    /// The windows the stage before passed on.
    Windows {
        from: mpsc::Receiver<Vec<SpooledRow>>,
        buffered: std::collections::VecDeque<SpooledRow>,
    },
}

impl Rows {
    pub fn after(from: mpsc::Receiver<Vec<SpooledRow>>) -> Self {
        Self::Windows {
            from,
            buffered: std::collections::VecDeque::new(),
        }
    }

    /// The next row; `None` after the last. Cancel-safe (state changes only after an await).
    async fn next_row(&mut self) -> anyhow::Result<Option<SpooledRow>> {
        match self {
            Self::Tail(tail) => tail.next_row().await,
            Self::Windows { from, buffered } => loop {
                if let Some(row) = buffered.pop_front() {
                    return Ok(Some(row));
                }
                match from.recv().await {
                    Some(window) => buffered.extend(window),
                    None => return Ok(None),
                }
            },
        }
    }
}

/// How a stage numbers its batches: `webhook-id` `<task_id>.<batch>` with batch
/// `n * hooks + hook` for its n-th asked window, so every hook's numbers are fixed by its own
/// windows (stages run at once, none waits to learn how many batches an earlier one had) and a
/// template with one hook numbers 0, 1, 2, …
#[derive(Debug, Clone, Copy)]
pub struct Numbering {
    pub hook: u32,
    pub hooks: u32,
}

/// Runs one hook's stage until its rows end: every window passed on to `out` after its answer
/// was merged, every new answer sent to `keep`.
pub async fn run(
    target: &Target<'_>,
    merge: &mut Merge<'_>,
    mut rows: Rows,
    numbering: Numbering,
    out: mpsc::Sender<Vec<SpooledRow>>,
    keep: mpsc::Sender<KeptAnswer>,
) -> Result<(), Stop> {
    let keep_all = target.run.template.on_invalid == OnInvalid::KeepInvalidRows;
    let size = target.hook.batch_size();
    let mut in_flight = FuturesOrdered::new();
    let mut window: Vec<SpooledRow> = Vec::with_capacity(size);
    let mut asked = 0usize;
    let mut ended = false;
    let mut asked_windows = 0u32;
    while !ended || !in_flight.is_empty() {
        let room = !ended && in_flight.len() < IN_FLIGHT;
        tokio::select! {
            biased;
            Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                let answered: anyhow::Result<Result<Answered, _>> = done;
                let answered = answered?.map_err(Stop::Unavailable)?;
                let mut rows = answered.window;
                if let Some(answer) = answered.answer {
                    merge.apply(&mut rows, answer);
                }
                if let Some(kept) = answered.keep {
                    keep.send(kept).await.map_err(|_| Stop::closed("the hook answer keeper"))?;
                }
                out.send(rows).await.map_err(|_| Stop::closed("the next stage"))?;
            }
            next = rows.next_row(), if room => {
                match next? {
                    Some(row) => {
                        // At most a batch of rows, asked or not: a window never grows past
                        // it, however many rows an earlier hook left out.
                        asked += usize::from(row.may_be_stored(keep_all));
                        window.push(row);
                        if window.len() < size {
                            continue;
                        }
                    }
                    None => ended = true,
                }
                if window.is_empty() {
                    continue;
                }
                let batch = asked_windows * numbering.hooks + numbering.hook;
                asked_windows += u32::from(asked > 0);
                let full = std::mem::replace(&mut window, Vec::with_capacity(size));
                in_flight.push_back(target.ask(batch, full, asked > 0, keep_all));
                asked = 0;
            }
        }
    }
    Ok(())
}

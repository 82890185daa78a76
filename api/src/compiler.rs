//! Template compiling, off the request threads. Compiling a template is CPU work (up to the
//! template's pattern budget, [`template::TEMPLATE_PATTERN_BYTES`]), and on the async
//! runtime's threads it stalled every other request: four `PUT`s of 1,000 patterns at once made
//! `/healthz` take 3.5 s. Here it runs on the blocking pool, at most half the cores' worth
//! at a time (at least one), so the runtime's threads always have a core; a request
//! waiting for its turn holds no thread.

use std::sync::Arc;

use serde_json::Value as Json;
use template::{Problem, Template};
use tokio::sync::Semaphore;

/// Compiles templates on the blocking pool, a bounded number at a time. Cheap to clone.
#[derive(Clone)]
pub struct Compiler {
    permits: Arc<Semaphore>,
}

impl Default for Compiler {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            permits: Arc::new(Semaphore::new((cores / 2).max(1))),
        }
    }
}

impl Compiler {
    /// [`template::compile`] of `schema`, when a place is free.
    pub async fn compile(&self, schema: Json) -> anyhow::Result<Result<Template, Vec<Problem>>> {
        let _turn = self.permits.acquire().await?;
        Ok(tokio::task::spawn_blocking(move || template::compile(&schema)).await?)
    }
}

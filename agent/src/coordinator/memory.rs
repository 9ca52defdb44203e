//! Memory (seed 004: the orchestrator "gathers context (memory +
//! knowledge)" before it classifies and plans, and "stores to long-term
//! memory" after). Before classifying, the run recalls the memories most
//! like its task, once, and both the classifier and the planner read them
//! (rules and corrections first, within a fixed budget); the roles that
//! decide later read what people taught too: the executor what concerns
//! its step, the adapter, recovery, the emergent update and a batch's
//! planner every recalled rule and correction. When it ends, it leaves a
//! summary of itself and every correction people made on the way (an
//! edit before approving, a change mid-run among them).
//! A run started with `memory: false` does neither.

use super::*;
use crate::run::RunEntry;
use run_model::entry::RecalledMemory;
use run_model::memory::{
    prompt_section, step_section, taught_section, MemoryKind, NewMemory, MEMORY_TEXT, RECALLED,
};

/// Corrections one run keeps (the oldest go first).
const CORRECTIONS_KEPT: usize = 20;
/// People's comments on subtasks remembered from one run.
const SAID_KEPT: usize = 5;

impl Driver {
    /// The recalled memories as a prompt section ("" when none or the run
    /// opted out).
    pub(super) async fn recalled(&mut self) -> String {
        self.recall_once().await;
        prompt_section(self.recalled.as_deref().unwrap_or_default())
    }

    /// What people taught (recalled rules and corrections) for a role
    /// that changes the plan as work goes: the adapter, recovery, the
    /// emergent update, a batch's planner ("" when nothing, or the run
    /// opted out).
    pub(super) async fn taught(&mut self) -> String {
        self.recall_once().await;
        taught_section(self.recalled.as_deref().unwrap_or_default())
    }

    /// What people taught that concerns how subtask `id` is done, for its
    /// executor (recalled before the work started: see `execute`).
    pub(super) fn taught_for_step(&self, plan: &Plan, id: SubtaskId) -> String {
        let (Some(recalled), Some(s)) = (self.recalled.as_deref(), plan.subtask(id)) else {
            return String::new();
        };
        // Only rules and corrections concern a step: with none recalled
        // (most runs), the step's text is not even put together.
        if !recalled
            .iter()
            .any(|m| matches!(m.kind, MemoryKind::Rule | MemoryKind::Correction))
        {
            return String::new();
        }
        let step = format!(
            "{} {} {} {}",
            s.name(),
            s.description(),
            s.expected_outcome(),
            s.tool().unwrap_or_default()
        );
        step_section(recalled, &step)
    }

    /// Recalls the memories like the run's task, once (none when the run
    /// opted out).
    pub(super) async fn recall_once(&mut self) {
        if !self.run.config.memory {
            return;
        }
        if self.recalled.is_none() {
            let found = match self.host.recall(&self.run.config.task, RECALLED).await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!("run {}: memories could not be recalled: {e}", self.run.id);
                    Vec::new()
                }
            };
            if !found.is_empty() {
                self.caller
                    .log(RunEntry::Recalled {
                        memories: found
                            .iter()
                            .map(|m| RecalledMemory {
                                id: m.id,
                                kind: m.kind,
                                excerpt: cut(&m.text, 200),
                            })
                            .collect(),
                    })
                    .await;
            }
            self.recalled = Some(found);
        }
    }

    /// The task as a correction names it.
    fn task_named(&self) -> String {
        format!("«{}»", cut(self.run.config.task.trim(), 150))
    }

    /// Keeps a correction for the memory the run leaves.
    pub(super) fn correction(&mut self, what: String) {
        let text = format!("For the task {}, {what}", self.task_named());
        self.run.corrections.push(cut(&text, 600));
        if self.run.corrections.len() > CORRECTIONS_KEPT {
            self.run.corrections.remove(0);
        }
    }

    /// What the finished run leaves in memory: itself, and what people
    /// corrected (kept on the run's row as they happened) and said about
    /// its subtasks (read from the plan).
    pub(super) async fn remember(&mut self) {
        if !self.run.config.memory || !self.run.state.is_finished() {
            return;
        }
        let plan = match self.run.plan_id {
            Some(id) => self.host.plan(id).await.ok(),
            None => None,
        };
        let task = cut(self.run.config.task.trim(), 1_000);
        let memory = |kind, text: String| NewMemory {
            kind,
            task: task.clone(),
            text: cut(&text, MEMORY_TEXT),
            run_id: Some(self.run.id),
            plan_id: self.run.plan_id,
        };
        let mut memories: Vec<NewMemory> = self
            .run
            .corrections
            .iter()
            .map(|c| memory(MemoryKind::Correction, c.clone()))
            .collect();
        let mut summary = format!("Task: {}.", cut(self.run.config.task.trim(), 300));
        if let Some(c) = &self.run.classification {
            summary.push_str(&format!(
                " Mode: {} (decided by {}).",
                c.mode.as_str(),
                c.by
            ));
        }
        // The outcome before the plan, so a cut never hides it; and only a
        // run that ended done lends its plan to later planners. A failed
        // or cancelled run's plan is what not to do again: Qwen2.5-1.5B,
        // shown one whose steps summed made-up numbers ("Compute 720
        // divisors sum"), planned the same step for the same task. The
        // run and plan ids keep the whole plan for a person.
        summary.push_str(&format!(" Outcome: {}", self.run.state));
        if let Some(reason) = &self.run.reason {
            summary.push_str(&format!(" ({})", cut(reason, 200)));
        }
        summary.push('.');
        if let Some(plan) = &plan {
            let names: Vec<&str> = plan.subtasks().iter().take(12).map(|s| s.name()).collect();
            if !names.is_empty() && self.run.state == RunState::Done {
                summary.push_str(&format!(" Plan: {}.", names.join(" → ")));
            }
            let said: Vec<String> = plan
                .comments()
                .iter()
                .filter(|c| c.author != AGENT_ACTOR)
                .filter_map(|c| Some((plan.subtask(c.subtask?)?, c)))
                .rev()
                .take(SAID_KEPT)
                .map(|(s, c)| {
                    format!(
                        "For the task {}, on the subtask «{}» {} said: {}",
                        self.task_named(),
                        cut(s.name(), 100),
                        c.author,
                        cut(&c.body, 400)
                    )
                })
                .collect();
            for text in said.into_iter().rev() {
                memories.push(memory(MemoryKind::Correction, text));
            }
        }
        // The model's free-text answer is not kept: it may carry what a
        // page or a file told the model, and a later task's planner
        // copied an earlier answer's words and numbers as its own. A good
        // review keeps what a person vouched for.
        memories.push(memory(MemoryKind::Run, summary));
        let count = memories.len();
        // A store busy for a moment is tried again (3 attempts, 250 then
        // 500 ms apart); the run is over, so the wait costs nobody.
        let retry = crate::retry::RetryPolicy {
            attempts: 3,
            base: std::time::Duration::from_millis(250),
            max_delay: std::time::Duration::from_secs(1),
        };
        let mut attempt = 1;
        loop {
            match self.host.remember(memories.clone()).await {
                Ok(()) => {
                    self.caller.log(RunEntry::Remembered { count }).await;
                    return;
                }
                Err(e) => match retry.backoff(attempt) {
                    Some(wait) => {
                        tracing::info!("run {}: remembering it failed ({e}); again", self.run.id);
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    None => {
                        tracing::warn!("run {}: could not remember it: {e}", self.run.id);
                        return;
                    }
                },
            }
        }
    }
}

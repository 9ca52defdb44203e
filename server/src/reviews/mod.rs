//! People's reviews of finished plans: each reviewer writes their own,
//! the team reads them all, and the agent remembers each (a correction
//! memory, or a review memory for a good verdict, recalled before the
//! next similar task is classified and planned) unless the plan's run
//! opted out of memory.
//!
//! # Layout
//! - this file: [`Reviews`], the one service the API, the board and MCP
//!   call; [`ReviewStore`], what it needs stored; [`ReviewError`];
//! - `sql.rs`: [`ReviewStore`] over the server's SQL store.

mod sql;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use plan_engine::{PlanError, PlanId, StateFilter};
use run_model::{MemoryKind, NewMemory, NewReview, Review, ReviewVerdict, RunRecord, ToReview};

use crate::runlog::RunStore;
use crate::service::{PlanService, ServiceError};
use crate::store::StoreError;

/// The reviews' table (and the memories reviews leave).
#[async_trait]
pub trait ReviewStore: Send + Sync {
    /// Stores a reviewer's review of a plan (replacing theirs) and the
    /// memory it leaves (forgetting the one their earlier review left).
    async fn put_review(
        &self,
        review: &Review,
        memory: Option<&NewMemory>,
    ) -> Result<Review, StoreError>;
    /// Whether the reviewer had a review of the plan (and its memory) to remove.
    async fn delete_review(&self, plan: PlanId, reviewer: &str) -> Result<bool, StoreError>;
    /// A plan's reviews, oldest first.
    async fn plan_reviews(&self, plan: PlanId) -> Result<Vec<Review>, StoreError>;
    /// Reviews, newest change first.
    async fn list_reviews(
        &self,
        verdict: Option<ReviewVerdict>,
        reviewer: Option<&str>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Review>, StoreError>;
    /// Every reviewed plan's verdicts, oldest review first.
    async fn verdicts(&self) -> Result<HashMap<PlanId, Vec<ReviewVerdict>>, StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The plan is unknown (or the plan service refused).
    #[error(transparent)]
    Plan(#[from] ServiceError),
    /// The review was refused (not a finished plan, too long, an unknown
    /// subtask…); nothing was stored.
    #[error(transparent)]
    Refused(#[from] run_model::ReviewError),
    #[error("{reviewer} has no review of plan {plan}")]
    NotFound { plan: PlanId, reviewer: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn unknown(id: PlanId) -> ReviewError {
    ReviewError::Plan(ServiceError::Plan(PlanError::UnknownPlan { id }))
}

/// Writing, removing and reading reviews, and the queue of plans nobody
/// reviewed.
pub struct Reviews {
    plans: Arc<PlanService>,
    store: Arc<dyn ReviewStore>,
    /// Which run worked a plan: whether it remembers, what was asked.
    runs: Arc<dyn RunStore>,
}

impl Reviews {
    pub fn new(
        plans: Arc<PlanService>,
        store: Arc<dyn ReviewStore>,
        runs: Arc<dyn RunStore>,
    ) -> Reviews {
        Reviews { plans, store, runs }
    }

    /// The newest agent run on `plan`, if the agent made it.
    async fn run_of_plan(&self, plan: PlanId) -> Result<Option<RunRecord>, ReviewError> {
        Ok(self.runs.runs_on(&[plan]).await?.into_iter().next())
    }

    /// Writes `reviewer`'s review of `plan` (their earlier one is
    /// replaced; nobody else's is touched) and remembers it.
    pub async fn write(
        &self,
        plan: PlanId,
        reviewer: &str,
        review: NewReview,
    ) -> Result<Review, ReviewError> {
        let checked = self
            .plans
            .read(plan, |p| review.checked(p).map(|r| (r, p.clone())))
            .await
            .ok_or_else(|| unknown(plan))?;
        let (review, snapshot) = checked?;
        let now = chrono::Utc::now();
        let stored = Review {
            id: uuid::Uuid::new_v4(),
            plan_id: plan,
            reviewer: reviewer.to_string(),
            verdict: review.verdict,
            note: review.note,
            subtasks: review.subtasks,
            plan_version: snapshot.version(),
            created_at: now,
            updated_at: now,
        };
        let run = self.run_of_plan(plan).await?;
        let memory = match &run {
            Some(run) if !run.config.memory => None,
            _ => Some(NewMemory {
                // A good review is praise, not a correction: it never
                // takes a correction's slot when recalled.
                kind: if stored.verdict == ReviewVerdict::Good {
                    MemoryKind::Review
                } else {
                    MemoryKind::Correction
                },
                // Recalled by what was asked, as the run's own memories are.
                task: run.as_ref().map_or_else(
                    || format!("{} {}", snapshot.title(), snapshot.goal()),
                    |r| r.config.task.clone(),
                ),
                text: stored.memory_text(&snapshot),
                run_id: run.as_ref().map(|r| r.id),
                plan_id: Some(plan),
            }),
        };
        Ok(self.store.put_review(&stored, memory.as_ref()).await?)
    }

    /// Removes `reviewer`'s review of `plan` and the memory it left.
    pub async fn remove(&self, plan: PlanId, reviewer: &str) -> Result<(), ReviewError> {
        match self.store.delete_review(plan, reviewer).await? {
            true => Ok(()),
            false => Err(ReviewError::NotFound {
                plan,
                reviewer: reviewer.to_string(),
            }),
        }
    }

    /// A plan's reviews, oldest first.
    pub async fn of_plan(&self, plan: PlanId) -> Result<Vec<Review>, ReviewError> {
        if self.plans.read(plan, |_| ()).await.is_none() {
            return Err(unknown(plan));
        }
        Ok(self.store.plan_reviews(plan).await?)
    }

    /// Reviews, newest change first.
    pub async fn list(
        &self,
        verdict: Option<ReviewVerdict>,
        reviewer: Option<&str>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Review>, ReviewError> {
        Ok(self
            .store
            .list_reviews(verdict, reviewer, offset, limit)
            .await?)
    }

    /// Every reviewed plan's verdicts.
    pub async fn verdicts(&self) -> Result<HashMap<PlanId, Vec<ReviewVerdict>>, ReviewError> {
        Ok(self.store.verdicts().await?)
    }

    /// The review queue: finished plans nobody reviewed (of those `keep`
    /// admits), newest finish first, a page of them, and how many there
    /// are in all.
    pub async fn queue(
        &self,
        offset: usize,
        limit: usize,
        keep: impl Fn(&plan_engine::Plan) -> bool,
    ) -> Result<(Vec<ToReview>, usize), ReviewError> {
        let reviewed = self.store.verdicts().await?;
        let mut waiting: Vec<ToReview> = self
            .plans
            .scan(|p| {
                (StateFilter::Finished.admits(p.state())
                    && !reviewed.contains_key(&p.id())
                    && keep(p))
                .then(|| ToReview {
                    plan_id: p.id(),
                    title: p.title().to_string(),
                    task: None,
                    run_id: None,
                    state: p.state(),
                    mode: p.mode(),
                    finished_at: p.finished_at(),
                })
            })
            .await;
        let total = waiting.len();
        waiting.sort_by(|a, b| {
            b.finished_at
                .cmp(&a.finished_at)
                .then(a.plan_id.cmp(&b.plan_id))
        });
        let mut page: Vec<ToReview> = waiting.into_iter().skip(offset).take(limit).collect();
        let ids: Vec<PlanId> = page.iter().map(|t| t.plan_id).collect();
        let runs: HashMap<PlanId, RunRecord> = self
            .runs
            .runs_on(&ids)
            .await?
            .into_iter()
            .filter_map(|r| Some((r.plan_id?, r)))
            .collect();
        for item in &mut page {
            if let Some(run) = runs.get(&item.plan_id) {
                item.task = Some(run.config.task.clone());
                item.run_id = Some(run.id);
            }
        }
        Ok((page, total))
    }
}

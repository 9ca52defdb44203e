//! People's reviews of finished plans: each reviewer writes their own,
//! the team reads them all, and the agent remembers each (a correction
//! memory, or a review memory for a good verdict, recalled before the
//! next similar task is classified and planned) unless the plan's run
//! opted out of memory.

use std::collections::HashMap;

use plan_engine::{PlanError, PlanId, StateFilter};
use run_model::{
    MemoryKind, NewMemory, NewReview, Review, ReviewError, ReviewVerdict, RunRecord, ToReview,
};

use super::{RunError, Runs};
use crate::service::ServiceError;

fn unknown(id: PlanId) -> RunError {
    RunError::Plan(ServiceError::Plan(PlanError::UnknownPlan { id }))
}

impl Runs {
    /// The newest agent run on `plan`, if the agent made it.
    async fn run_of_plan(&self, plan: PlanId) -> Result<Option<RunRecord>, RunError> {
        Ok(self.store.runs_on(&[plan]).await?.into_iter().next())
    }

    /// Writes `reviewer`'s review of `plan` (their earlier one is
    /// replaced; nobody else's is touched) and remembers it.
    pub async fn review(
        &self,
        plan: PlanId,
        reviewer: &str,
        review: NewReview,
    ) -> Result<Review, RunError> {
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
    pub async fn unreview(&self, plan: PlanId, reviewer: &str) -> Result<(), RunError> {
        match self.store.delete_review(plan, reviewer).await? {
            true => Ok(()),
            false => Err(RunError::NoReview {
                plan,
                reviewer: reviewer.to_string(),
            }),
        }
    }

    /// A plan's reviews, oldest first.
    pub async fn reviews_of(&self, plan: PlanId) -> Result<Vec<Review>, RunError> {
        if self.plans.read(plan, |_| ()).await.is_none() {
            return Err(unknown(plan));
        }
        Ok(self.store.plan_reviews(plan).await?)
    }

    /// Reviews, newest change first.
    pub async fn reviews(
        &self,
        verdict: Option<ReviewVerdict>,
        reviewer: Option<&str>,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<Review>, RunError> {
        Ok(self
            .store
            .list_reviews(verdict, reviewer, offset, limit)
            .await?)
    }

    /// Every reviewed plan's verdicts.
    pub async fn verdicts(&self) -> Result<HashMap<PlanId, Vec<ReviewVerdict>>, RunError> {
        Ok(self.store.verdicts().await?)
    }

    /// The review queue: finished plans nobody reviewed (of those `keep`
    /// admits), newest finish first, a page of them, and how many there
    /// are in all.
    pub async fn review_queue(
        &self,
        offset: usize,
        limit: usize,
        keep: impl Fn(&plan_engine::Plan) -> bool,
    ) -> Result<(Vec<ToReview>, usize), RunError> {
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
            .store
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

impl From<ReviewError> for RunError {
    fn from(e: ReviewError) -> Self {
        RunError::Review(e)
    }
}

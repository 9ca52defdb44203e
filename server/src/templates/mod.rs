//! Plans saved as templates: any plan with subtasks can be saved under a
//! name (by whoever may edit plans); a run started from one carries a copy
//! of it in its config, so deleting or replacing the template later does
//! not change a run in flight.
//!
//! # Layout
//! - this file: [`Templates`], the one service the API, the board and the
//!   runs call; [`TemplateStore`], what it needs stored; [`TemplateError`];
//! - `sql.rs`: [`TemplateStore`] over the server's SQL store.

mod sql;

use std::sync::Arc;

use async_trait::async_trait;
use plan_engine::{PlanError, PlanId};
use run_model::{Template, TemplateId};

use crate::runlog::RunStore;
use crate::service::{PlanService, ServiceError};
use crate::store::StoreError;

/// The templates' table: written once, read by the task box, the runs and
/// the API, deleted by a person.
#[async_trait]
pub trait TemplateStore: Send + Sync {
    async fn insert_template(&self, template: &Template) -> Result<(), StoreError>;
    async fn template(&self, id: TemplateId) -> Result<Option<Template>, StoreError>;
    /// Newest first, a page of them.
    async fn list_templates(&self, offset: u32, limit: u32) -> Result<Vec<Template>, StoreError>;
    /// Whether there was one to delete.
    async fn delete_template(&self, id: TemplateId) -> Result<bool, StoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The plan to save is unknown (or the plan service refused).
    #[error(transparent)]
    Plan(#[from] ServiceError),
    /// The plan cannot be saved as a template; nothing was stored.
    #[error(transparent)]
    Refused(run_model::TemplateError),
    #[error("no template has id {0}")]
    NotFound(TemplateId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Saving, listing, reading and deleting templates.
pub struct Templates {
    plans: Arc<PlanService>,
    store: Arc<dyn TemplateStore>,
    /// Which run (if any) worked a plan: its task is what was asked.
    runs: Arc<dyn RunStore>,
}

impl Templates {
    pub fn new(
        plans: Arc<PlanService>,
        store: Arc<dyn TemplateStore>,
        runs: Arc<dyn RunStore>,
    ) -> Templates {
        Templates { plans, store, runs }
    }

    /// Saves `plan` as the template `name`.
    pub async fn save(
        &self,
        plan: PlanId,
        name: &str,
        who: &str,
    ) -> Result<Template, TemplateError> {
        let snapshot = self
            .plans
            .read(plan, |p| p.clone())
            .await
            .ok_or(ServiceError::Plan(PlanError::UnknownPlan { id: plan }))?;
        // What was asked: the agent's run's task, else what the plan says.
        let task = match self.runs.runs_on(&[plan]).await?.into_iter().next() {
            Some(run) => run.config.task,
            None => format!("{} {}", snapshot.title(), snapshot.goal()),
        };
        let template = Template::of_plan(
            &snapshot,
            name,
            &task,
            uuid::Uuid::new_v4(),
            who,
            chrono::Utc::now(),
        )
        .map_err(TemplateError::Refused)?;
        self.store.insert_template(&template).await?;
        // As stored (the database keeps microseconds), as every read shows it.
        self.get(template.id).await
    }

    pub async fn get(&self, id: TemplateId) -> Result<Template, TemplateError> {
        self.store
            .template(id)
            .await?
            .ok_or(TemplateError::NotFound(id))
    }

    /// Templates, newest first.
    pub async fn list(&self, offset: u32, limit: u32) -> Result<Vec<Template>, TemplateError> {
        Ok(self.store.list_templates(offset, limit).await?)
    }

    pub async fn delete(&self, id: TemplateId) -> Result<(), TemplateError> {
        match self.store.delete_template(id).await? {
            true => Ok(()),
            false => Err(TemplateError::NotFound(id)),
        }
    }
}

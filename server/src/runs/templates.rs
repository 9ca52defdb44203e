//! Plans saved as templates: any plan with subtasks can be saved under a
//! name (by whoever may edit plans); a run started from one carries a copy
//! of it in its config, so deleting or replacing the template later does
//! not change a run in flight.

use plan_engine::{PlanError, PlanId};
use run_model::{Template, TemplateId};

use super::{RunError, Runs};
use crate::service::ServiceError;

impl Runs {
    /// Saves `plan` as the template `name`.
    pub async fn save_template(
        &self,
        plan: PlanId,
        name: &str,
        who: &str,
    ) -> Result<Template, RunError> {
        let snapshot = self
            .plans
            .read(plan, |p| p.clone())
            .await
            .ok_or(RunError::Plan(ServiceError::Plan(PlanError::UnknownPlan {
                id: plan,
            })))?;
        // What was asked: the agent's run's task, else what the plan says.
        let task = match self.store.runs_on(&[plan]).await?.into_iter().next() {
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
        .map_err(RunError::Template)?;
        self.store.insert_template(&template).await?;
        // As stored (the database keeps microseconds), as every read shows it.
        self.template(template.id).await
    }

    pub async fn template(&self, id: TemplateId) -> Result<Template, RunError> {
        self.store
            .template(id)
            .await?
            .ok_or(RunError::NoTemplate(id))
    }

    /// Templates, newest first.
    pub async fn templates(&self, offset: u32, limit: u32) -> Result<Vec<Template>, RunError> {
        Ok(self.store.list_templates(offset, limit).await?)
    }

    pub async fn delete_template(&self, id: TemplateId) -> Result<(), RunError> {
        match self.store.delete_template(id).await? {
            true => Ok(()),
            false => Err(RunError::NoTemplate(id)),
        }
    }
}

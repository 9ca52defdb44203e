//! [`CaseStore`] on the server's SQL store (SQLite or PostgreSQL), on the
//! same database as the plans. A case's row and its checks are written in
//! one transaction; suite runs and their results as JSON records with
//! what is filtered on copied out.

use plan_engine::Plan;
use run_model::{
    Case, CaseId, CaseResult, Check, GraphNode, InputFile, RunConfig, RunId, SuiteRun, SuiteRunId,
};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::CaseStore;
use crate::store::sql::{corrupt, read_ts, ts};
use crate::store::{SqlStore, StoreError};

const COLUMNS: &str = "id, name, tags, task, run_id, plan_id, graph, answer, inputs, retired, \
    created_by, created_at, updated_at";

fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(corrupt)
}

fn read<T: serde::de::DeserializeOwned>(row: &AnyRow, column: &str) -> Result<T, StoreError> {
    let text: String = row.try_get(column)?;
    serde_json::from_str(&text).map_err(|e| corrupt(format!("{column}: {e}")))
}

/// A case's row, without its checks.
fn case_of(row: &AnyRow) -> Result<Case, StoreError> {
    let id: String = row.try_get("id")?;
    let run: String = row.try_get("run_id")?;
    let plan: String = row.try_get("plan_id")?;
    let retired: i64 = row.try_get("retired")?;
    Ok(Case {
        id: id.parse().map_err(corrupt)?,
        name: row.try_get("name")?,
        tags: read::<Vec<String>>(row, "tags")?,
        task: row.try_get("task")?,
        run_id: run.parse().map_err(corrupt)?,
        plan_id: plan.parse().map_err(corrupt)?,
        graph: read::<Vec<GraphNode>>(row, "graph")?,
        answer: row.try_get("answer")?,
        inputs: read::<Vec<InputFile>>(row, "inputs")?,
        checks: Vec::new(),
        retired: retired != 0,
        created_by: row.try_get("created_by")?,
        created_at: read_ts(row, "created_at")?,
        updated_at: read_ts(row, "updated_at")?,
    })
}

impl SqlStore {
    /// The checks of these cases, each case's in its order.
    async fn checks_of(&self, cases: &mut [Case]) -> Result<(), StoreError> {
        let rows = sqlx::query("SELECT case_id, spec FROM case_checks ORDER BY case_id, position")
            .fetch_all(&self.pool)
            .await?;
        for row in rows {
            let id: String = row.try_get("case_id")?;
            let id: CaseId = id.parse().map_err(corrupt)?;
            if let Some(case) = cases.iter_mut().find(|c| c.id == id) {
                case.checks.push(read::<Check>(&row, "spec")?);
            }
        }
        Ok(())
    }

    /// Writes a case's checks in place of its old ones, in `tx`.
    async fn write_checks(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        case: &Case,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM case_checks WHERE case_id = $1")
            .bind(case.id.to_string())
            .execute(&mut **tx)
            .await?;
        for (position, check) in case.checks.iter().enumerate() {
            let kind = serde_json::to_value(check)
                .ok()
                .and_then(|v| v["kind"].as_str().map(str::to_string))
                .unwrap_or_default();
            sqlx::query(
                "INSERT INTO case_checks (case_id, position, kind, spec) VALUES ($1, $2, $3, $4)",
            )
            .bind(case.id.to_string())
            .bind(position as i64)
            .bind(kind)
            .bind(json(check)?)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl CaseStore for SqlStore {
    async fn insert_case(
        &self,
        case: &Case,
        plan: &Plan,
        config: &RunConfig,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        sqlx::query(&format!(
            "INSERT INTO cases ({COLUMNS}, plan, config) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(case.id.to_string())
        .bind(case.name.clone())
        .bind(json(&case.tags)?)
        .bind(case.task.clone())
        .bind(case.run_id.to_string())
        .bind(case.plan_id.to_string())
        .bind(json(&case.graph)?)
        .bind(case.answer.clone())
        .bind(json(&case.inputs)?)
        .bind(i64::from(case.retired))
        .bind(case.created_by.clone())
        .bind(ts(case.created_at))
        .bind(ts(case.updated_at))
        .bind(json(plan)?)
        .bind(json(config)?)
        .execute(&mut *tx)
        .await?;
        SqlStore::write_checks(&mut tx, case).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn cases(&self) -> Result<Vec<Case>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM cases ORDER BY created_at DESC, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        let mut cases = rows.iter().map(case_of).collect::<Result<Vec<_>, _>>()?;
        self.checks_of(&mut cases).await?;
        Ok(cases)
    }

    async fn case(&self, id: CaseId) -> Result<Option<Case>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM cases WHERE id = $1"))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let mut case = case_of(&row)?;
        let checks =
            sqlx::query("SELECT spec FROM case_checks WHERE case_id = $1 ORDER BY position")
                .bind(id.to_string())
                .fetch_all(&self.pool)
                .await?;
        for row in &checks {
            case.checks.push(read::<Check>(row, "spec")?);
        }
        Ok(Some(case))
    }

    async fn case_of_run(&self, run: RunId) -> Result<Option<CaseId>, StoreError> {
        let row = sqlx::query("SELECT id FROM cases WHERE run_id = $1")
            .bind(run.to_string())
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => {
                let id: String = row.try_get("id")?;
                Ok(Some(id.parse().map_err(corrupt)?))
            }
            None => Ok(None),
        }
    }

    async fn case_setup(&self, id: CaseId) -> Result<Option<(Plan, RunConfig)>, StoreError> {
        let row = sqlx::query("SELECT plan, config FROM cases WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => Ok(Some((
                read::<Plan>(&row, "plan")?,
                read::<RunConfig>(&row, "config")?,
            ))),
            None => Ok(None),
        }
    }

    async fn update_case(&self, case: &Case) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "UPDATE cases SET name = $1, tags = $2, retired = $3, updated_at = $4 WHERE id = $5",
        )
        .bind(case.name.clone())
        .bind(json(&case.tags)?)
        .bind(i64::from(case.retired))
        .bind(ts(case.updated_at))
        .bind(case.id.to_string())
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        SqlStore::write_checks(&mut tx, case).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn delete_case(&self, id: CaseId) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM case_checks WHERE case_id = $1")
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query("DELETE FROM cases WHERE id = $1")
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn insert_suite(
        &self,
        run: &SuiteRun,
        owner: &str,
        slot: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO suite_runs (id, state, model, owner, slot, record, started_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(run.id.to_string())
        .bind(run.state.as_str().to_string())
        .bind(run.model.clone())
        .bind(owner.to_string())
        .bind(slot.map(str::to_string))
        .bind(json(run)?)
        .bind(ts(run.started_at))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn save_suite(&self, run: &SuiteRun) -> Result<(), StoreError> {
        sqlx::query("UPDATE suite_runs SET state = $1, record = $2 WHERE id = $3")
            .bind(run.state.as_str().to_string())
            .bind(json(run)?)
            .bind(run.id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn suite(&self, id: SuiteRunId) -> Result<Option<SuiteRun>, StoreError> {
        let row = sqlx::query("SELECT record FROM suite_runs WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref()
            .map(|r| read::<SuiteRun>(r, "record"))
            .transpose()
    }

    async fn suites(&self, limit: u32) -> Result<Vec<SuiteRun>, StoreError> {
        let rows =
            sqlx::query("SELECT record FROM suite_runs ORDER BY started_at DESC, id LIMIT $1")
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?;
        rows.iter().map(|r| read::<SuiteRun>(r, "record")).collect()
    }

    async fn running_suites(&self, owner: &str) -> Result<Vec<SuiteRun>, StoreError> {
        let rows = sqlx::query("SELECT record FROM suite_runs WHERE state = $1 AND owner = $2")
            .bind(run_model::SuiteState::Running.as_str().to_string())
            .bind(owner.to_string())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| read::<SuiteRun>(r, "record")).collect()
    }

    async fn put_results(&self, results: &[CaseResult]) -> Result<(), StoreError> {
        for result in results {
            sqlx::query(
                "INSERT INTO suite_results (suite_id, position, case_id, outcome, record) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (suite_id, position) DO UPDATE SET case_id = excluded.case_id, \
                 outcome = excluded.outcome, record = excluded.record",
            )
            .bind(result.suite_id.to_string())
            .bind(i64::from(result.position))
            .bind(result.case_id.to_string())
            .bind(result.outcome.as_str().to_string())
            .bind(json(result)?)
            .execute(&self.pool)
            .await?;
        }
        Ok(())
    }

    async fn results(&self, suite: SuiteRunId) -> Result<Vec<CaseResult>, StoreError> {
        let rows =
            sqlx::query("SELECT record FROM suite_results WHERE suite_id = $1 ORDER BY position")
                .bind(suite.to_string())
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|r| read::<CaseResult>(r, "record"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_model::{CaseOutcome, SuiteState, SuiteTools};

    fn suite_run(started: i64) -> SuiteRun {
        SuiteRun {
            id: uuid::Uuid::new_v4(),
            state: SuiteState::Running,
            reason: None,
            tag: None,
            model: "m".into(),
            version: "0.1.0".into(),
            unmatched: SuiteTools::Replay,
            budget: Default::default(),
            started_by: "ada".into(),
            started_at: chrono::DateTime::from_timestamp(started, 0).unwrap(),
            finished_at: None,
            cases: 1,
            passed: 0,
            failed: 0,
            skipped: 0,
            score: None,
            node_f1: None,
            edge_f1: None,
            spent: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_case_keeps_its_checks_in_order_and_a_slot_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("cases.db").display());
        let store = SqlStore::connect(&url).await.unwrap();
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let (plan, _) = Plan::create(
            &plan_engine::NewPlan {
                title: "sales".into(),
                subtasks: vec![plan_engine::NewSubtask::named("sum")],
                ..plan_engine::NewPlan::default()
            },
            "ada",
            at,
        )
        .unwrap();
        let mut case = Case {
            id: uuid::Uuid::new_v4(),
            name: "sales".into(),
            tags: vec!["csv".into()],
            task: "sum the sales".into(),
            run_id: uuid::Uuid::new_v4(),
            plan_id: plan.id(),
            graph: GraphNode::of_plan(&plan),
            answer: Some("12".into()),
            inputs: Vec::new(),
            checks: vec![
                Check::AnswerNumber {
                    number: 12.0,
                    tolerance: 0.0,
                },
                Check::StepDone {
                    subtask: 1,
                    name: "sum".into(),
                },
            ],
            retired: false,
            created_by: "ada".into(),
            created_at: at,
            updated_at: at,
        };
        store
            .insert_case(&case, &plan, &RunConfig::default())
            .await
            .unwrap();
        assert_eq!(store.case(case.id).await.unwrap().as_ref(), Some(&case));
        assert_eq!(store.case_of_run(case.run_id).await.unwrap(), Some(case.id));
        let (kept, _) = store.case_setup(case.id).await.unwrap().unwrap();
        assert_eq!(kept.id(), plan.id());
        case.checks.reverse();
        case.retired = true;
        assert!(store.update_case(&case).await.unwrap());
        assert_eq!(store.cases().await.unwrap(), vec![case.clone()]);
        assert!(
            matches!(
                store.insert_case(&case, &plan, &RunConfig::default()).await,
                Err(StoreError::Constraint(_))
            ),
            "one case per run"
        );

        let first = suite_run(1_800_000_000);
        store
            .insert_suite(&first, "here", Some("2027-01-01T06:00:00Z"))
            .await
            .unwrap();
        let again = suite_run(1_800_000_100);
        assert!(matches!(
            store
                .insert_suite(&again, "there", Some("2027-01-01T06:00:00Z"))
                .await,
            Err(StoreError::Constraint(_))
        ));
        store.insert_suite(&again, "there", None).await.unwrap();
        assert_eq!(
            store.running_suites("here").await.unwrap(),
            vec![first.clone()]
        );
        let result = CaseResult {
            suite_id: first.id,
            case_id: case.id,
            case_name: case.name.clone(),
            position: 0,
            outcome: CaseOutcome::Passed,
            case_run: Some(case.run_id),
            run_id: None,
            reason: None,
            node_f1: Some(1.0),
            edge_f1: Some(1.0),
            checks: Vec::new(),
            wall_ms: 5,
            llm_calls: 2,
            tokens: 30,
            cost: run_model::Usd::ZERO,
            answer: None,
            divergence: None,
        };
        store
            .put_results(std::slice::from_ref(&result))
            .await
            .unwrap();
        let failed = CaseResult {
            outcome: CaseOutcome::Failed,
            ..result
        };
        store
            .put_results(std::slice::from_ref(&failed))
            .await
            .unwrap();
        assert_eq!(store.results(first.id).await.unwrap(), vec![failed]);
        assert_eq!(
            store
                .suites(10)
                .await
                .unwrap()
                .iter()
                .map(|s| s.id)
                .collect::<Vec<_>>(),
            vec![again.id, first.id],
            "newest first"
        );
        assert!(store.delete_case(case.id).await.unwrap());
        assert_eq!(store.case(case.id).await.unwrap(), None);
    }
}

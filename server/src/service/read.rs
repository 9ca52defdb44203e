//! Reads: plans as committed, lists, hints, the stored log and comments.

use super::*;

impl PlanService {
    /// The plan as committed.
    pub async fn get(&self, id: PlanId) -> Option<Plan> {
        self.book.lock().await.committed(id).cloned()
    }

    /// Runs `read` on a plan as committed, under the lock, without copying it.
    pub async fn read<T>(&self, id: PlanId, read: impl FnOnce(&Plan) -> T) -> Option<T> {
        self.book.lock().await.committed(id).map(read)
    }

    /// Maps every committed plan, keeping the `Some`s.
    pub async fn scan<T>(&self, mut keep: impl FnMut(&Plan) -> Option<T>) -> Vec<T> {
        let book = self.book.lock().await;
        let ids: Vec<PlanId> = book.all().map(|p| p.id()).collect();
        ids.into_iter()
            .filter_map(|id| book.committed(id))
            .filter_map(&mut keep)
            .collect()
    }

    /// One page of the plans `query` admits, latest activity first, each
    /// mapped by `row`, and whether more follow: the one list path of the
    /// API, the board and history.
    pub async fn list<T>(
        &self,
        query: &PlanQuery,
        offset: usize,
        limit: usize,
        row: impl Fn(&Plan) -> T,
    ) -> (Vec<T>, bool) {
        self.list_where(query, |_| true, offset, limit, row).await
    }

    /// [`PlanService::list`] of the plans `query` and `keep` both admit.
    pub async fn list_where<T>(
        &self,
        query: &PlanQuery,
        keep: impl Fn(&Plan) -> bool,
        offset: usize,
        limit: usize,
        row: impl Fn(&Plan) -> T,
    ) -> (Vec<T>, bool) {
        let book = self.book.lock().await;
        let ids: Vec<PlanId> = book.all().map(|p| p.id()).collect();
        let mut hits: Vec<&Plan> = ids
            .into_iter()
            .filter_map(|id| book.committed(id))
            .filter(|plan| query.matches(plan) && keep(plan))
            .collect();
        hits.sort_by(|a, b| {
            b.updated_at()
                .cmp(&a.updated_at())
                .then(a.id().cmp(&b.id()))
        });
        let more = hits.len() > offset.saturating_add(limit);
        let rows = hits.into_iter().skip(offset).take(limit).map(row).collect();
        (rows, more)
    }

    /// Runs `read` on the session's active plan, if it has one.
    pub async fn read_active<T>(&self, session: &str, read: impl FnOnce(&Plan) -> T) -> Option<T> {
        let book = self.book.lock().await;
        let plan = PlanBook::active(&*book, session).and_then(|id| book.get(id));
        plan.map(read)
    }

    /// An agent session's settings (all unset for one that set none).
    pub async fn session_settings(&self, session: &str) -> Result<SessionSettings, ServiceError> {
        Ok(self.store.session_settings(session).await?)
    }

    /// `opts` with the session's rules: its confirmation setting (which a
    /// plan's own overrides, in the engine) and its subtask limit for when
    /// it has no plan yet.
    async fn with_session_rules(
        &self,
        session: &str,
        opts: &HintOptions,
    ) -> Result<HintOptions, ServiceError> {
        let settings = self.session_settings(session).await?;
        let mut opts = opts.clone();
        opts.needs_confirmation = settings
            .need_user_confirm
            .unwrap_or(opts.needs_confirmation);
        opts.max_subtasks = opts.max_subtasks.or(settings.max_subtasks);
        Ok(opts)
    }

    /// The hint for a session's next step, and the version of the plan it
    /// describes. Reads only: `opts.since_version` (the caller's) decides
    /// whether an unchanged plan gets the one-line hint.
    pub async fn session_hint(
        &self,
        session: &str,
        opts: &HintOptions,
    ) -> Result<(String, Option<u64>), ServiceError> {
        let opts = self.with_session_rules(session, opts).await?;
        let book = self.book.lock().await;
        let plan = PlanBook::active(&*book, session).and_then(|id| book.get(id));
        Ok((plan_engine::hint(plan, &opts), plan.map(|p| p.version())))
    }

    /// [`PlanService::session_hint`] for an agent that wants the server to
    /// remember what it was shown: unless `fresh`, a plan still at the
    /// version of this session's previous hint gets the one-line hint.
    pub async fn session_hint_remembered(
        &self,
        session: &str,
        opts: &HintOptions,
        fresh: bool,
    ) -> Result<(String, Option<u64>), ServiceError> {
        let mut opts = self.with_session_rules(session, opts).await?;
        let book = self.book.lock().await;
        let plan = PlanBook::active(&*book, session).and_then(|id| book.get(id));
        let mut shown = self.hints_shown.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(plan), false) = (plan, fresh) {
            opts.since_version = shown.version_shown(session, plan.id());
        }
        shown.record(session, plan.map(|p| (p.id(), p.version())));
        Ok((plan_engine::hint(plan, &opts), plan.map(|p| p.version())))
    }

    pub async fn events(
        &self,
        id: PlanId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, ServiceError> {
        Ok(self.store.events(Some(id), after, limit).await?)
    }

    /// Whether the plan exists or existed (a deleted plan's log is kept).
    pub async fn ever_existed(&self, id: PlanId) -> Result<bool, ServiceError> {
        if self.read(id, |_| ()).await.is_some() {
            return Ok(true);
        }
        Ok(!self.store.events(Some(id), 0, 1).await?.is_empty())
    }

    pub async fn comments(&self, id: PlanId) -> Result<Vec<StoredComment>, ServiceError> {
        Ok(self.store.comments(id).await?)
    }
}

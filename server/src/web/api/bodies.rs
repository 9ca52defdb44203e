//! The API's request bodies, one type per route, each turned into the
//! engine's [`Op`] in Rust. Their JSON Schemas (schemars, following the
//! serde attributes) are the OpenAPI document's request schemas.
//!
//! Every body that changes a plan may carry `expected_version` (or the
//! request an `If-Match` header): the write then fails with a 409 if the
//! plan has moved on.

use plan_engine::{
    Command, InfoPatch, NewSubtask, Op, PlanState, Position, SubtaskId, SubtaskPatch, SubtaskState,
};
use schemars::JsonSchema;
use serde::Deserialize;

use super::error::ApiError;

/// A body that becomes one engine operation on one plan.
pub trait IntoOp {
    /// `subtask` is the `{sid}` of the route, for subtask routes.
    fn into_op(self, subtask: Option<SubtaskId>) -> Result<Op, ApiError>;
    fn expected_version(&self) -> Option<u64>;

    fn into_command(
        self,
        subtask: Option<SubtaskId>,
        if_match: Option<u64>,
    ) -> Result<Command, ApiError>
    where
        Self: Sized,
    {
        let expected_version = if_match.or(self.expected_version());
        Ok(Command {
            op: self.into_op(subtask)?,
            expected_version,
        })
    }
}

fn subtask_of(subtask: Option<SubtaskId>) -> Result<SubtaskId, ApiError> {
    // Every subtask route has `{sid}`; a missing one is a routing mistake.
    subtask.ok_or(ApiError::Internal)
}

/// Declares a body struct with `expected_version` and its [`IntoOp`].
macro_rules! plan_body {
    (
        $(#[$meta:meta])*
        $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }
        |$this:ident, $sid:ident| $op:expr
    ) => {
        #[derive(Debug, Deserialize, JsonSchema)]
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
            /// The plan version this change was decided on; a newer plan
            /// answers 409 instead of being overwritten.
            #[serde(default)]
            pub expected_version: Option<u64>,
        }

        impl IntoOp for $name {
            #[allow(unused_variables)]
            fn into_op(self, $sid: Option<SubtaskId>) -> Result<Op, ApiError> {
                let $this = self;
                Ok($op)
            }
            fn expected_version(&self) -> Option<u64> {
                self.expected_version
            }
        }
    };
}

plan_body! {
    /// `PATCH /api/plans/{id}`: the plan fields to change; absent ones stay.
    UpdatePlan {
        #[serde(flatten)]
        patch: InfoPatch,
    }
    |b, _sid| Op::UpdateInfo { patch: b.patch }
}

plan_body! {
    /// `POST /api/plans/{id}/subtasks`.
    #[serde(deny_unknown_fields)]
    AddSubtask {
        subtask: NewSubtask,
        /// `"end"` (default), `{"index": n}` (0-based), `{"after": id}` or `{"before": id}`.
        #[serde(default)]
        position: Position,
        /// Seed 000's rewiring: the not-yet-started subtasks that depended on
        /// this subtask depend on the new one instead.
        #[serde(default)]
        rewire_after: Option<SubtaskId>,
        /// Not-yet-started subtasks that get the new one as a dependency.
        #[serde(default)]
        required_by: Vec<SubtaskId>,
    }
    |b, _sid| Op::AddSubtask {
        subtask: b.subtask,
        position: b.position,
        rewire_after: b.rewire_after,
        required_by: b.required_by,
    }
}

plan_body! {
    /// `PATCH /api/plans/{id}/subtasks/{sid}`: the fields to change.
    EditSubtask {
        #[serde(flatten)]
        patch: SubtaskPatch,
    }
    |b, sid| Op::EditSubtask { id: subtask_of(sid)?, patch: b.patch }
}

plan_body! {
    /// `POST …/subtasks/{sid}/state`: a move in the subtask state table.
    #[serde(deny_unknown_fields)]
    SetState {
        state: SubtaskState,
        /// Becomes the outcome: the result on done, the error on failed,
        /// the reason on blocked or skipped.
        #[serde(default)]
        note: Option<String>,
        /// Finishing this subtask also starts the next ready one.
        #[serde(default)]
        start_next: bool,
    }
    |b, sid| Op::SetSubtaskState {
        id: subtask_of(sid)?,
        state: b.state,
        note: b.note,
        start_next: b.start_next,
    }
}

plan_body! {
    /// `POST …/subtasks/{sid}/move`: a new place in the display order.
    #[serde(deny_unknown_fields)]
    MoveSubtask {
        /// 0-based.
        to_index: u32,
    }
    |b, sid| Op::MoveSubtask { id: subtask_of(sid)?, to_index: b.to_index as usize }
}

plan_body! {
    /// `POST …/subtasks/{sid}/dependencies`: the whole new list.
    #[serde(deny_unknown_fields)]
    SetDependencies {
        dependencies: Vec<SubtaskId>,
    }
    |b, sid| Op::SetDependencies { id: subtask_of(sid)?, dependencies: b.dependencies }
}

plan_body! {
    /// `POST …/subtasks/{sid}/notes`: replaces the working notes.
    #[serde(deny_unknown_fields)]
    SetNotes {
        notes: String,
    }
    |b, sid| Op::SetNotes { id: subtask_of(sid)?, notes: b.notes }
}

/// `POST /api/plans/{id}/approve` (the body may be left out).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Approve {
    #[serde(default)]
    pub comment: Option<String>,
    /// The plan's `digest` as the person read it (`GET /api/plans/{id}`):
    /// a plan that says something else now is refused with 409 `stale`,
    /// so an approval is of what was read and is never replayed onto
    /// another version.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub digest: Option<String>,
    /// Guarded tools granted for the plan's run with the approval, so
    /// their calls no longer ask: `{"tool": "run_shell"}` the whole tool,
    /// `{"tool": "write_file", "pattern": "out/*"}` the calls whose main
    /// argument (a path, a URL's host, a command, a search query) matches
    /// the glob (`*` any run of characters, never a shell operator in a
    /// command; `?` one). Each grant is an approval record, revocable
    /// with `DELETE /api/runs/{id}/grants/{grant}`.
    #[serde(default)]
    #[schemars(length(max = run_model::grant::MAX_GRANTS))]
    pub grants: Vec<run_model::NewGrant>,
    /// Approve without starting: `true` holds the run until `POST
    /// /api/runs/{id}/start`; an RFC 3339 time starts it then (or on the
    /// click before); `false`, a past time or absent: it starts at once.
    #[serde(default)]
    pub hold: Option<HoldBody>,
    /// The plan version this change was decided on; a newer plan
    /// answers 409 instead of being overwritten.
    #[serde(default)]
    pub expected_version: Option<u64>,
}

/// `hold` of an approval: a flag, or when to start.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HoldBody {
    /// `true`: held until a click.
    Click(bool),
    /// Held until this time (RFC 3339).
    Until(chrono::DateTime<chrono::Utc>),
}

impl Approve {
    /// The approval, bound to the version `if_match` names if the body
    /// names none.
    pub fn approval(self, if_match: Option<u64>) -> crate::approvals::PlanApproval {
        crate::approvals::PlanApproval {
            comment: self.comment,
            digest: self.digest,
            expected_version: if_match.or(self.expected_version),
            grants: self.grants,
            hold: HoldBody::hold(self.hold),
        }
    }
}

impl HoldBody {
    /// An approval's `hold` as the approvals take it: `None` starts at
    /// once, `Some(None)` on a click, `Some(Some(t))` at `t`.
    pub fn hold(body: Option<HoldBody>) -> Option<Option<chrono::DateTime<chrono::Utc>>> {
        match body {
            None | Some(HoldBody::Click(false)) => None,
            Some(HoldBody::Click(true)) => Some(None),
            Some(HoldBody::Until(at)) => Some(Some(at)),
        }
    }
}

plan_body! {
    /// `POST /api/plans/{id}/reject`: the comment says what to change.
    #[serde(deny_unknown_fields)]
    Reject {
        comment: String,
    }
    |b, _sid| Op::Reject { comment: b.comment }
}

plan_engine::wire_enum! {
    /// How a plan may finish.
    #[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
    pub enum Ending: "ending (done, failed or abandoned)" {
        Done = "done",
        Failed = "failed",
        Abandoned = "abandoned",
    }
}

plan_body! {
    /// `POST /api/plans/{id}/finish`.
    #[serde(deny_unknown_fields)]
    Finish {
        state: Ending,
        /// The result, or why it failed or was abandoned.
        #[serde(default)]
        outcome: String,
    }
    |b, _sid| Op::Finish {
        state: match b.state {
            Ending::Done => PlanState::Done,
            Ending::Failed => PlanState::Failed,
            Ending::Abandoned => PlanState::Abandoned,
        },
        outcome: b.outcome,
    }
}

/// The most subtasks one `start-next` starts.
pub const START_AT_MOST: u32 = 100;

plan_body! {
    /// `POST /api/plans/{id}/start-next`: starts up to `count` ready subtasks.
    #[serde(deny_unknown_fields)]
    StartNext {
        #[serde(default = "default_batch")]
        #[schemars(range(min = 1, max = START_AT_MOST))]
        count: u32,
    }
    |b, _sid| {
        if !(1..=START_AT_MOST).contains(&b.count) {
            return Err(ApiError::BadRequest(format!(
                "count must be between 1 and {START_AT_MOST}, not {}",
                b.count
            )));
        }
        Op::StartNext { count: b.count as usize }
    }
}

fn default_batch() -> u32 {
    plan_engine::DEFAULT_BATCH as u32
}

/// An empty `start-next` body starts the default batch.
impl Default for StartNext {
    fn default() -> StartNext {
        StartNext {
            count: default_batch(),
            expected_version: None,
        }
    }
}

plan_body! {
    /// `POST /api/plans/{id}/replace-subtasks`: OpenManus' `update` by names.
    #[serde(deny_unknown_fields)]
    ReplaceSubtasks {
        subtasks: Vec<NewSubtask>,
    }
    |b, _sid| Op::ReplaceSubtasks { subtasks: b.subtasks }
}

/// The body of `submit`, `pause`, `resume` and `recover`: nothing but
/// `expected_version`, and it may be left out entirely.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoFields {
    /// The plan version this change was decided on; a newer plan answers
    /// 409 instead of being overwritten.
    #[serde(default)]
    pub expected_version: Option<u64>,
}

impl NoFields {
    pub fn command(self, op: Op, if_match: Option<u64>) -> Command {
        Command {
            op,
            expected_version: if_match.or(self.expected_version),
        }
    }
}

plan_body! {
    /// `POST /api/plans/{id}/comments`.
    #[serde(deny_unknown_fields)]
    NewComment {
        body: String,
        /// The subtask the comment is about, if any.
        #[serde(default)]
        subtask: Option<SubtaskId>,
    }
    |b, _sid| Op::Comment { subtask: b.subtask, body: b.body }
}

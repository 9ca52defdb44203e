//! One readable line per event, for the board's timeline and reviews.
//!
//! The line names subtasks by `#id 'name'`, looked up in the plan as it was
//! just before the event (a deleted subtask still has its name there).

use crate::event::{Event, EventKind};
use crate::hint::Lang;
use crate::model::{Plan, SubtaskId};

fn name(plan: &Plan, id: SubtaskId) -> String {
    match plan.subtask(id) {
        Some(s) => format!("#{} '{}'", id.0, s.name),
        None => format!("#{}", id.0),
    }
}

fn ids(list: &[SubtaskId]) -> String {
    if list.is_empty() {
        return "—".into();
    }
    list.iter()
        .map(|d| format!("#{}", d.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `event` did, in `lang`, given the plan just before it.
pub fn describe(event: &Event, before: &Plan, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    match &event.kind {
        EventKind::PlanCreated { plan } => {
            let n = plan.subtasks.len();
            if zh {
                format!("创建计划 '{}'，共 {n} 个子任务", plan.title)
            } else {
                format!("created plan '{}' with {n} subtask(s)", plan.title)
            }
        }
        EventKind::InfoUpdated { info } => {
            if zh {
                format!("修改计划信息（标题 '{}'）", info.title)
            } else {
                format!("updated the plan's info (title '{}')", info.title)
            }
        }
        EventKind::SubtaskAdded { subtask, index, .. } => {
            let deps = ids(&subtask.dependencies);
            if zh {
                format!(
                    "在第 {} 位添加子任务 #{} '{}'（依赖 {deps}）",
                    index + 1,
                    subtask.id.0,
                    subtask.name
                )
            } else {
                format!(
                    "added subtask #{} '{}' at position {} (depends on {deps})",
                    subtask.id.0,
                    subtask.name,
                    index + 1
                )
            }
        }
        EventKind::SubtaskEdited { id, fields } => {
            let old = before.subtask(*id).map(|s| s.name.as_str());
            let renamed = old.filter(|o| *o != fields.name);
            match (renamed, zh) {
                (Some(old), true) => {
                    format!("编辑子任务 #{}：'{old}' 改名为 '{}'", id.0, fields.name)
                }
                (Some(old), false) => {
                    format!(
                        "edited subtask #{}: renamed '{old}' to '{}'",
                        id.0, fields.name
                    )
                }
                (None, true) => format!("编辑子任务 {}", name(before, *id)),
                (None, false) => format!("edited subtask {}", name(before, *id)),
            }
        }
        EventKind::DependenciesSet { id, dependencies } => {
            let deps = ids(dependencies);
            if zh {
                format!("{} 的依赖改为 {deps}", name(before, *id))
            } else {
                format!("set the dependencies of {} to {deps}", name(before, *id))
            }
        }
        EventKind::SubtaskDeleted { id, inherited_by } => {
            let heirs = if inherited_by.is_empty() {
                String::new()
            } else if zh {
                format!("（{} 继承其依赖）", ids(inherited_by))
            } else {
                format!(" ({} inherit its dependencies)", ids(inherited_by))
            };
            if zh {
                format!("删除子任务 {}{heirs}", name(before, *id))
            } else {
                format!("deleted subtask {}{heirs}", name(before, *id))
            }
        }
        EventKind::SubtaskMoved { id, to_index } => {
            if zh {
                format!("把 {} 移到第 {} 位", name(before, *id), to_index + 1)
            } else {
                format!("moved {} to position {}", name(before, *id), to_index + 1)
            }
        }
        EventKind::SubtaskStateChanged { id, from, to, note } => {
            let note = note
                .as_deref()
                .map(|n| lang.pick(format!(": {n}"), format!("：{n}")))
                .unwrap_or_default();
            let (from, to) = (from.label(lang), to.label(lang));
            if zh {
                format!("{}：{from} → {to}{note}", name(before, *id))
            } else {
                format!("{}: {from} → {to}{note}", name(before, *id))
            }
        }
        EventKind::SubtaskNotesSet { id, .. } => {
            if zh {
                format!("更新 {} 的笔记", name(before, *id))
            } else {
                format!("updated the notes of {}", name(before, *id))
            }
        }
        EventKind::SubtasksReplaced { subtasks, .. } => {
            if zh {
                format!("把全部子任务替换为 {} 个新子任务", subtasks.len())
            } else {
                format!("replaced all subtasks with {} new one(s)", subtasks.len())
            }
        }
        EventKind::PlanStateChanged { from, to, reason } => {
            let reason = reason
                .as_deref()
                .map(|r| lang.pick(format!(": {r}"), format!("：{r}")))
                .unwrap_or_default();
            let (from, to) = (from.label(lang), to.label(lang));
            if zh {
                format!("计划：{from} → {to}{reason}")
            } else {
                format!("plan: {from} → {to}{reason}")
            }
        }
        EventKind::ApprovalDecided { status, comment } => {
            let comment = comment
                .as_deref()
                .map(|c| format!(": “{c}”"))
                .unwrap_or_default();
            let verdict = match (status, zh) {
                (crate::model::ApprovalStatus::Approved, false) => "approved the plan",
                (crate::model::ApprovalStatus::Rejected, false) => "rejected the plan",
                (_, false) => "changed the approval",
                (crate::model::ApprovalStatus::Approved, true) => "批准了计划",
                (crate::model::ApprovalStatus::Rejected, true) => "驳回了计划",
                (_, true) => "修改了审批状态",
            };
            format!("{verdict}{comment}")
        }
        EventKind::CommentAdded { comment } => {
            let on = match (comment.subtask, zh) {
                (Some(id), false) => format!(" on {}", name(before, id)),
                (Some(id), true) => format!("（{}）", name(before, id)),
                (None, _) => String::new(),
            };
            if zh {
                format!("评论{on}：{}", comment.body)
            } else {
                format!("commented{on}: {}", comment.body)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Op;
    use crate::model::{NewPlan, NewSubtask, SubtaskState};
    use chrono::TimeZone;

    #[test]
    fn a_state_change_names_the_subtask_both_states_and_the_note_in_either_language() {
        let now = chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let spec = NewPlan {
            title: "p".into(),
            subtasks: vec![NewSubtask::named("write tests")],
            ..NewPlan::default()
        };
        let (mut plan, created) = Plan::create(&spec, "alice", now).unwrap();
        assert_eq!(
            describe(&created[0], &plan, Lang::En),
            "created plan 'p' with 1 subtask(s)"
        );
        let before = plan.clone();
        let op = Op::SetSubtaskState {
            id: SubtaskId(1),
            state: SubtaskState::InProgress,
            note: Some("picked up".into()),
            start_next: false,
        };
        let events = plan.execute(&op.into(), "alice", now).unwrap();
        let changed = events
            .iter()
            .find(|e| matches!(e.kind, EventKind::SubtaskStateChanged { .. }))
            .unwrap();
        assert_eq!(
            describe(changed, &before, Lang::En),
            "#1 'write tests': todo → in progress: picked up"
        );
        assert_eq!(
            describe(changed, &before, Lang::Zh),
            "#1 'write tests'：待办 → 进行中：picked up"
        );
    }
}

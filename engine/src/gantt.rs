//! A plan as a Gantt chart in SVG: one bar per subtask from its start to its
//! finish (to `now` while it runs), coloured by state, so super-steps and
//! parallelism show at a glance; beside each row, the tokens its model calls
//! used, when the caller knows them. Server-rendered, so the board shows it
//! as an image and its wasm stays small.

use std::fmt::Write;

use crate::hint::Lang;
use crate::model::{Plan, SubtaskId, SubtaskState, Timestamp};

const ROW: i64 = 26;
const TOP: i64 = 34;
const LABEL: i64 = 230;
const CHART: i64 = 560;
const TOKENS: i64 = 220;
const WIDTH: i64 = LABEL + CHART + TOKENS + 20;

/// The board's colours per state (an image cannot read the page's CSS).
fn colour(state: SubtaskState) -> &'static str {
    match state {
        SubtaskState::Todo => "#a1a1aa",
        SubtaskState::InProgress => "#2563eb",
        SubtaskState::Blocked => "#d97706",
        SubtaskState::Done => "#16a34a",
        SubtaskState::Failed => "#dc2626",
        SubtaskState::Skipped => "#6b7280",
    }
}

/// Text as SVG character data or attribute value: never markup.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// At most `n` characters, with an ellipsis when cut.
/// Milliseconds as "12.3 s" (or "4 min 5 s"), without float printing.
fn span(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 60_000 {
        format!("{}.{} s", ms / 1000, ms % 1000 / 100)
    } else {
        format!("{} min {} s", ms / 60_000, ms % 60_000 / 1000)
    }
}

/// What a subtask's model calls used: tokens, and their cost as the
/// caller writes money (`$0.0075`; `None` when no call had a price).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtaskUse {
    pub subtask: SubtaskId,
    pub tokens: u64,
    pub cost: Option<String>,
}

/// Rows in one window of the chart: a plan of 5,000 subtasks drawn whole is
/// a 130,000-pixel image nobody scrolls; the board pages through windows.
pub const WINDOW: usize = 200;

/// The chart's first window. `used` says what each subtask's model calls
/// spent.
pub fn gantt_svg(plan: &Plan, now: Timestamp, used: &[SubtaskUse], lang: Lang) -> String {
    gantt_window(plan, now, used, lang, 0)
}

/// The rows `from..from + WINDOW` of the chart (in plan order), on the
/// whole plan's time axis, so windows compare at a glance.
pub fn gantt_window(
    plan: &Plan,
    now: Timestamp,
    used: &[SubtaskUse],
    lang: Lang,
    from: usize,
) -> String {
    let all = plan.subtasks();
    let from = from.min(all.len());
    let subtasks = &all[from..(from + WINDOW).min(all.len())];
    let rows = i64::try_from(subtasks.len()).unwrap_or(i64::MAX / ROW - 2);
    let height = TOP + rows.max(1) * ROW + 12;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="system-ui, sans-serif" font-size="12">"#
    );
    let ends = |s: &crate::model::Subtask| {
        let start = s.started_at()?;
        let end = s.finished_at().unwrap_or(now).max(start);
        Some((start, end))
    };
    let first = all.iter().filter_map(|s| ends(s).map(|(a, _)| a)).min();
    let last = all.iter().filter_map(|s| ends(s).map(|(_, b)| b)).max();
    let most_tokens = used.iter().map(|u| u.tokens).max().unwrap_or(0);
    let (Some(first), Some(last)) = (first, last) else {
        let _ = write!(
            out,
            r##"<text x="8" y="20" fill="#71717a">{}</text>"##,
            lang.pick("No subtask has started yet.", "还没有开始的子任务。")
        );
        rows_only(&mut out, subtasks, used, most_tokens, lang);
        out.push_str("</svg>");
        return out;
    };
    let total = (last - first).num_milliseconds().max(1);
    let x = |t: Timestamp| LABEL + (t - first).num_milliseconds() * CHART / total;
    // The time axis: five ticks from the first start to the last end.
    for q in 0..=4 {
        let at = LABEL + CHART * q / 4;
        let anchor = match q {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = write!(
            out,
            r##"<line x1="{at}" y1="{TOP}" x2="{at}" y2="{}" stroke="#e4e4e7"/><text x="{at}" y="{}" fill="#71717a" text-anchor="{anchor}">{}</text>"##,
            height - 12,
            TOP - 10,
            span(total * q / 4)
        );
    }
    rows_only(&mut out, subtasks, used, most_tokens, lang);
    for (i, s) in (0i64..).zip(subtasks) {
        let Some((start, end)) = ends(s) else {
            continue;
        };
        let y = TOP + i * ROW + 5;
        let (x1, x2) = (x(start), x(end));
        let running = if s.state() == SubtaskState::InProgress {
            r#" fill-opacity="0.6""#
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<rect x="{x1}" y="{y}" width="{}" height="{}" rx="3" fill="{}"{running} data-subtask="{}" data-start="{}" data-end="{}"><title>#{} {}: {}, {}</title></rect>"#,
            (x2 - x1).max(2),
            ROW - 10,
            colour(s.state()),
            s.id().0,
            (start - first).num_milliseconds(),
            (end - first).num_milliseconds(),
            s.id().0,
            escape(s.name()),
            s.state().label(lang),
            span((end - start).num_milliseconds())
        );
    }
    out.push_str("</svg>");
    out
}

/// The labels and the token bars (with the cost beside them), one row per
/// subtask.
fn rows_only(
    out: &mut String,
    subtasks: &[std::sync::Arc<crate::model::Subtask>],
    used: &[SubtaskUse],
    most: u64,
    lang: Lang,
) {
    let used: std::collections::HashMap<SubtaskId, &SubtaskUse> =
        used.iter().map(|u| (u.subtask, u)).collect();
    if most > 0 {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" fill="#71717a">{}</text>"##,
            LABEL + CHART + 20,
            TOP - 10,
            lang.pick("tokens", "tokens")
        );
    }
    for (i, s) in (0i64..).zip(subtasks) {
        let y = TOP + i * ROW;
        let _ = write!(
            out,
            r##"<text x="8" y="{}" fill="#27272a">#{} {}</text>"##,
            y + ROW / 2 + 4,
            s.id().0,
            escape(&crate::text::ellipsis(s.name(), 30))
        );
        let Some(this) = used.get(&s.id()) else {
            continue;
        };
        let tokens = this.tokens;
        if most > 0 && tokens > 0 {
            let room = u64::try_from(TOKENS - 140).unwrap_or(0);
            let width = i64::try_from(tokens * room / most).unwrap_or(0).max(1);
            let (label, data_cost) = match &this.cost {
                Some(cost) => (
                    format!("{tokens} · {}", escape(cost)),
                    format!(r#" data-cost="{}""#, escape(cost)),
                ),
                None => (tokens.to_string(), String::new()),
            };
            let _ = write!(
                out,
                r##"<rect x="{}" y="{}" width="{width}" height="{}" fill="#a5b4fc" data-tokens="{tokens}"{data_cost}/><text x="{}" y="{}" fill="#52525b">{label}</text>"##,
                LABEL + CHART + 20,
                y + 8,
                ROW - 16,
                LABEL + CHART + 24 + width,
                y + ROW / 2 + 4
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Op;
    use crate::model::{NewPlan, NewSubtask};

    fn at(ms: i64) -> Timestamp {
        Timestamp::default() + chrono::Duration::milliseconds(ms)
    }

    #[test]
    fn parallel_subtasks_overlap_and_names_stay_text() {
        let spec = NewPlan {
            title: "t".into(),
            approval_required: false,
            subtasks: vec![
                NewSubtask::named("<script>alert(1)</script>"),
                NewSubtask::named("b"),
                NewSubtask::named("c").after(&[1, 2]),
            ],
            ..NewPlan::default()
        };
        let (mut plan, _) = Plan::create(&spec, "t", at(0)).unwrap();
        let set = |id: u32, state: SubtaskState| Op::SetSubtaskState {
            id: SubtaskId(id),
            state,
            note: Some("r".into()),
            start_next: false,
        };
        plan.execute_all(vec![set(1, SubtaskState::InProgress)], "t", at(0))
            .unwrap();
        plan.execute_all(vec![set(2, SubtaskState::InProgress)], "t", at(100))
            .unwrap();
        plan.execute_all(vec![set(1, SubtaskState::Done)], "t", at(1000))
            .unwrap();
        plan.execute_all(vec![set(2, SubtaskState::Done)], "t", at(1200))
            .unwrap();
        plan.execute_all(vec![set(3, SubtaskState::InProgress)], "t", at(1200))
            .unwrap();
        let used = [SubtaskUse {
            subtask: SubtaskId(3),
            tokens: 480,
            cost: Some("$0.0012".into()),
        }];
        let svg = gantt_svg(&plan, at(2000), &used, Lang::En);
        assert!(
            svg.contains(r#"data-subtask="1" data-start="0" data-end="1000""#),
            "{svg}"
        );
        assert!(
            svg.contains(r#"data-subtask="2" data-start="100" data-end="1200""#),
            "{svg}"
        );
        // Still running: drawn to `now`.
        assert!(
            svg.contains(r#"data-subtask="3" data-start="1200" data-end="2000""#),
            "{svg}"
        );
        assert!(svg.contains(r#"data-tokens="480" data-cost="$0.0012""#));
        assert!(svg.contains(">480 · $0.0012</text>"));
        assert!(!svg.contains("<script>"), "names are escaped");
        assert!(svg.contains("&lt;script&gt;"));
        assert!(svg.contains("2.0 s"), "the axis ends at the last end");
    }

    #[test]
    fn a_window_draws_its_rows_on_the_whole_plans_time_axis() {
        let spec = NewPlan {
            title: "t".into(),
            approval_required: false,
            subtasks: (1..=450)
                .map(|i| NewSubtask::named(format!("s{i}")))
                .collect(),
            ..NewPlan::default()
        };
        let (mut plan, _) = Plan::create(&spec, "t", at(0)).unwrap();
        let set = |id: u32, state: SubtaskState| Op::SetSubtaskState {
            id: SubtaskId(id),
            state,
            note: Some("r".into()),
            start_next: false,
        };
        plan.execute_all(vec![set(1, SubtaskState::InProgress)], "t", at(0))
            .unwrap();
        plan.execute_all(vec![set(1, SubtaskState::Done)], "t", at(1000))
            .unwrap();
        plan.execute_all(vec![set(420, SubtaskState::InProgress)], "t", at(3000))
            .unwrap();
        let last = gantt_window(&plan, at(4000), &[], Lang::En, 400);
        assert_eq!(last.matches("<text x=\"8\"").count(), 50, "rows 401 to 450");
        assert!(last.contains(">#401 s401<") && !last.contains(">#1 s1<"));
        // Subtask 1 is outside the window but still sets the axis's start.
        assert!(last.contains(r#"data-subtask="420" data-start="3000" data-end="4000""#));
        assert!(!last.contains(r#"data-subtask="1""#));
        let first = gantt_svg(&plan, at(4000), &[], Lang::En);
        assert_eq!(first.matches("<text x=\"8\"").count(), WINDOW);
        // Past the end: an empty window, not a panic.
        let past = gantt_window(&plan, at(4000), &[], Lang::En, 9_999);
        assert_eq!(past.matches("<text x=\"8\"").count(), 0);
    }

    #[test]
    fn a_plan_nothing_started_says_so() {
        let spec = NewPlan {
            title: "t".into(),
            subtasks: vec![NewSubtask::named("a")],
            ..NewPlan::default()
        };
        let (plan, _) = Plan::create(&spec, "t", at(0)).unwrap();
        let svg = gantt_svg(&plan, at(5), &[], Lang::Zh);
        assert!(svg.contains("还没有开始的子任务"));
        assert!(!svg.contains("data-subtask"));
    }
}
